package chrome

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/shirou/gopsutil/v4/process"

	"vibebrowser/manager/keeper"
)

// A keeper's identity file is written by the keeper, which may run as a store's browser user: a browser
// that user runs could rewrite it. So the manager, which may be root, signals only what the file names when
// the process table agrees: the keeper and its Chromium run as the user that owns the keeper's folder (what
// that user could signal itself), and Chromium is the keeper's child, leading its own process group.

// keeperUsers is whose processes the identity files in dir may name: its owner's; for a folder of the
// home's own (its owner owns the folder above it too, as run/ does, whoever made the home) the manager's
// own user's as well, which launched the keepers there. A browser user's folder is in run/keepers/, which is
// root's: its files name that user's processes only.
func keeperUsers(dir string) ([]int, error) {
	owner, err := dirOwner(dir)
	if err != nil {
		return nil, err
	}
	if parent, err := dirOwner(filepath.Dir(dir)); err == nil && parent == owner && owner != os.Geteuid() {
		return []int{owner, os.Geteuid()}, nil
	}
	return []int{owner}, nil
}

// runsAs reports why pid is not a process of one of uids (nil when its real, effective and saved uids are
// all one of them).
func runsAs(ctx context.Context, pid int, uids []int) error {
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return fmt.Errorf("pid %d: not running", pid)
	}
	ids, err := p.UidsWithContext(ctx)
	if err != nil || len(ids) == 0 {
		return fmt.Errorf("pid %d: its user unknown: %v", pid, err)
	}
	for _, id := range ids {
		if int(id) != int(ids[0]) || !slices.Contains(uids, int(id)) {
			return fmt.Errorf("pid %d runs as uid %d, not %v, whose keeper's folder it is", pid, id, uids)
		}
	}
	return nil
}

// keptBrowser reports why id's browser is not one the manager may signal as the keeper's (nil when it is):
// run as one of uids, the keeper's child, leading its own group.
func keptBrowser(ctx context.Context, id keeper.Identity, uids []int) error {
	if id.BrowserPGID != id.BrowserPID {
		return fmt.Errorf("the keeper's identity names chromium %d in process group %d: chromium leads its own group", id.BrowserPID, id.BrowserPGID)
	}
	if err := runsAs(ctx, id.BrowserPID, uids); err != nil {
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
