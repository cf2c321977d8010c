package procid

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/shirou/gopsutil/v4/process"
)

// userHZ is the unit of /proc's tick counts: the kernel's USER_HZ, 100 on every Linux architecture Go
// supports (it is fixed by the ABI, not by the kernel's own HZ).
const userHZ = 100

// bootTime is the kernel's btime from /proc/stat: whole seconds since the epoch, the same number for every
// process and every read until the next boot. gopsutil derives boot time from /proc/uptime inside a
// container instead (now − uptime, truncated to a second), which jumps by a second between two reads when
// its fraction sits near a whole second: one process then has two start times, a live daemon reads as
// "gone" and an adoptable browser as "pid reused".
var bootTime = sync.OnceValues(func() (int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			return strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/stat: no btime line")
})

// startTime is pid's start in ms since the epoch, from its starttime field (ticks since boot) and btime,
// both fixed for the life of the process, so every read of one process gives the same number.
func startTime(_ context.Context, p *process.Process) (int64, error) {
	boot, err := bootTime()
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(p.Pid)) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces or ')'; the fields after the last ')'
	// start at field 3, so starttime, field 22, is the 20th of them.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", p.Pid)
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name, want 20 or more", p.Pid, len(fields))
	}
	ticks, err := strconv.ParseInt(string(fields[19]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: starttime: %w", p.Pid, err)
	}
	return boot*1000 + ticks*1000/userHZ, nil
}
