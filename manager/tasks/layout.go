package tasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/mux/sys/osuser"
	"vibebrowser/state"
)

// Ownership on disk (SPEC §14). Where a store is an OS boundary (it has an agent user, under a root manager),
// the home's shared folders are enterable by everyone and listable by no one (root's, 0711); the state, the
// owner's socket and the keepers stay root's; each bounded store's runtime, browser-use temp and agent area
// are its agent user's (0700). The mux files downloads as the agent user's, the chrome backend gives the
// profile to the browser user. Without a bounded store nothing changes: the home is the manager's, 0700.

// sharedDirs are the folders under the home every store's users go through.
var sharedDirs = []string{"run", "bin", "r", "bh-tmp", "agents", "profiles", "downloads"}

// Layout lays out the home's folders for the stores' users.
type Layout struct {
	Cfg   *config.Config
	DB    *state.DB
	Fleet *browsers.Fleet
	Log   zerolog.Logger
}

// LayOut brings the home's ownership in line with every bounded store's; run at boot (repairing what was
// changed) and when a store is added or its users change.
func (l Layout) LayOut(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return nil
	}
	specs, err := l.allSpecs(ctx)
	if err != nil {
		return err
	}
	bc := l.Cfg.Browsers()
	var errs []error
	shared := false
	for _, sp := range specs {
		agent, err := bc.Agent(sp)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if agent == nil {
			continue
		}
		if !shared {
			errs = append(errs, l.layOutShared())
			shared = true
		}
		errs = append(errs, l.layOutStore(sp, agent))
		if err := agent.MayRead(api.AgentSocketPath(l.Cfg.Home)); err != nil {
			l.Log.Warn().Str("store", sp.Name).Str("agent_user", agent.Name).Err(err).
				Msg("the agent user cannot reach run/agent.sock: let it enter every folder above the home (chmod o+x), or set VIBE_HOME to a folder it can enter")
		}
	}
	return errors.Join(errs...)
}

// allSpecs is every store's browser spec and the web browser's.
func (l Layout) allSpecs(ctx context.Context) ([]browsers.Spec, error) {
	stores, err := l.DB.ListStores(ctx)
	if err != nil {
		return nil, err
	}
	web, err := l.Fleet.WebSpec(ctx)
	if err != nil {
		return nil, err
	}
	specs := []browsers.Spec{web}
	for _, s := range stores {
		sp, err := browsers.StoreSpec(s)
		if err != nil {
			return nil, err
		}
		specs = append(specs, sp)
	}
	return specs, nil
}

// layOutShared makes the home and its shared folders root's and enterable (0711), and the state root's only.
func (l Layout) layOutShared() error {
	var errs []error
	for _, d := range append([]string{""}, sharedDirs...) {
		errs = append(errs, ownDir(l.Cfg.Path(d), 0, 0, 0o711))
	}
	for _, f := range []string{"state.db", "state.db-wal", "state.db-shm", "run/manager.lock", "run/manager.lock.pid"} {
		if err := ownFile(l.Cfg.Path(f), 0, 0, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// layOutStore gives a bounded store's own folders to its agent user (0700), and keeps its downloads folder
// enterable (the mux makes each task's folder in it the agent user's).
func (l Layout) layOutStore(sp browsers.Spec, a *osuser.User) error {
	var errs []error
	for _, d := range []string{l.Cfg.Path("r", sp.Slug), l.Cfg.Path("bh-tmp", sp.Slug), l.Cfg.Path("agents", sp.Slug),
		l.Cfg.Path("agents", sp.Slug, "tmp")} {
		errs = append(errs, ownDir(d, a.UID, a.GID, 0o700))
	}
	errs = append(errs, ownDir(l.Cfg.Path("downloads", sp.Slug), 0, 0, 0o711))
	return errors.Join(errs...)
}

// ownDir makes dir (if missing) and sets its owner and mode.
func ownDir(dir string, uid, gid int, mode os.FileMode) error {
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("lay out %s: %w", dir, err)
	}
	return ownFile(dir, uid, gid, mode)
}

// ownFile sets path's owner and mode, without following a symlink there.
func ownFile(path string, uid, gid int, mode os.FileMode) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("lay out %s: a symlink, where the manager keeps one of its own: remove it", path)
	}
	if err := os.Lchown(path, uid, gid); err != nil {
		return fmt.Errorf("lay out %s: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("lay out %s: %w", path, err)
	}
	return nil
}
