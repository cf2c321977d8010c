package chrome

import (
	"context"
	"fmt"

	"github.com/shirou/gopsutil/v4/process"

	"vibebrowser/manager/keeper"
)

// A keeper's identity file is written by the keeper, which may run as a store's browser user: a browser
// that user runs could rewrite it. So the manager, which may be root, signals only what the file names when
// the process table agrees: the keeper and its Chromium run as the user that owns the keeper's folder (what
// that user could signal itself), and Chromium is the keeper's child, leading its own process group.

// runsAs reports why pid is not a process of uid alone (nil when every one of its user ids is uid).
func runsAs(ctx context.Context, pid, uid int) error {
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return fmt.Errorf("pid %d: not running", pid)
	}
	ids, err := p.UidsWithContext(ctx)
	if err != nil || len(ids) == 0 {
		return fmt.Errorf("pid %d: its user unknown: %v", pid, err)
	}
	for _, id := range ids {
		if int(id) != uid {
			return fmt.Errorf("pid %d runs as uid %d, not %d, the owner of the keeper's folder", pid, id, uid)
		}
	}
	return nil
}

// keptBrowser reports why id's browser is not one the manager may signal as the keeper's (nil when it is):
// run as uid, the keeper's child, leading its own group.
func keptBrowser(ctx context.Context, id keeper.Identity, uid int) error {
	if id.BrowserPGID != id.BrowserPID {
		return fmt.Errorf("the keeper's identity names chromium %d in process group %d: chromium leads its own group", id.BrowserPID, id.BrowserPGID)
	}
	if err := runsAs(ctx, id.BrowserPID, uid); err != nil {
		return fmt.Errorf("chromium: %w", err)
	}
	p, err := process.NewProcessWithContext(ctx, int32(id.BrowserPID))
	if err != nil {
		return fmt.Errorf("chromium %d: not running", id.BrowserPID)
	}
	if ppid, err := p.PpidWithContext(ctx); err != nil || int(ppid) != id.KeeperPID {
		return fmt.Errorf("chromium %d is not the child of keeper %d (its parent: %d, %v)", id.BrowserPID, id.KeeperPID, ppid, err)
	}
	return nil
}
