//go:build !linux

package procid

import (
	"context"

	"github.com/shirou/gopsutil/v4/process"
)

// startTime is pid's start in ms since the epoch, as gopsutil reads it (sysctl's kinfo_proc on macOS, a
// fixed record).
func startTime(ctx context.Context, p *process.Process) (int64, error) {
	return p.CreateTimeWithContext(ctx)
}
