package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"vibebrowser/manager/api"
)

// startFix is how to start a manager on this home.
const startFix = "start it: vibe-browser serve (or, with the service installed, systemctl --user start vibe-browser)"

// socket checks the manager's unix socket: ours, private, and answered.
func (m *machine) socket() Check {
	path := api.SocketPath(m.cfg.Home)
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ok("socket", path+" does not exist: no manager is running on this home")
	case err != nil:
		return fail("socket", err.Error(), "make "+path+" readable by this user")
	case fi.Mode().Type() != fs.ModeSocket:
		return fail("socket", path+" is not a socket", "move it aside; vibe-browser serve creates the socket")
	}
	if uid, mine := ownedByMe(fi); !mine {
		return fail("socket", fmt.Sprintf("%s belongs to uid %d, not to this user", path, uid),
			"run vibe-browser as the user whose manager owns it")
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fail("socket", fmt.Sprintf("%s has mode %04o (want 0600): other users can reach the manager", path, perm),
			"restart the manager (it binds the socket 0600), and find what changed its mode")
	}
	if m.mgr == nil && errors.Is(m.mgrErr, api.ErrUnreachable) {
		return warn("socket", path+" is left over: no manager answers on it", "nothing to do: the next vibe-browser serve removes it; or "+startFix)
	}
	if m.mgr == nil { // a manager is there but answered badly or not in time: the manager check says how
		return ok("socket", path+": private (0600); the manager behind it is in trouble (see the manager check)")
	}
	return ok("socket", path+": private (0600), answered")
}

// manager reports the running manager and whether it is this binary's version.
func (m *machine) manager() Check {
	if m.mgr == nil {
		var apiErr *api.Error
		if errors.As(m.mgrErr, &apiErr) {
			return fail("manager", "the manager answered status with an error: "+apiErr.Message, "see its log; restart it if it stays so")
		}
		if errors.Is(m.mgrErr, api.ErrUnreachable) {
			return warn("manager", "no manager is running on "+m.cfg.Home+"; agents' calls exit 69 until one is", startFix)
		}
		return fail("manager", "the manager does not answer status: "+m.mgrErr.Error(), "see its log; restart it")
	}
	detail := fmt.Sprintf("running (pid %d), version %s", m.mgr.PID, m.mgr.Version)
	if m.mgr.Version != m.o.Version {
		return fail("manager", fmt.Sprintf("%s, but this vibe-browser is version %s", detail, m.o.Version),
			"restart the manager with this binary (systemctl --user restart vibe-browser, or stop it and run vibe-browser serve)")
	}
	return ok("manager", detail+", the same as this vibe-browser")
}
