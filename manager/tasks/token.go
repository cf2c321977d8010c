package tasks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/manager/browsers"
	"vibebrowser/mux/sys/osuser"
	"vibebrowser/state"
)

// CheckID refuses a task id that is not one (api.TaskIDForm).
func CheckID(id string) error {
	if !api.ValidTaskID(id) {
		return fmt.Errorf("%w: task id %q: want %s", apierr.ErrBadRequest, id, api.TaskIDForm)
	}
	return nil
}

// Mint is the launcher's call (vibe-browser agent, env --task; SPEC §14): task id (checked with CheckID) is
// registered as running on its store, its token minted, and the agent's environment described.
func (d *Desk) Mint(ctx context.Context, id string, req api.TaskTokenRequest) (api.TaskToken, error) {
	var sp browsers.Spec
	var err error
	storeID := ""
	switch req.Store {
	case "":
		return api.TaskToken{}, fmt.Errorf("%w: a task token is for one store: name it (a name, slug or id), or %s for the web browser",
			apierr.ErrBadRequest, api.WebSlug)
	case api.WebSlug, api.WebKey:
		sp, err = d.cfg.Fleet.WebSpec(ctx)
	default:
		var s state.Store
		if s, err = d.cfg.FindStore(ctx, req.Store); err == nil {
			storeID = s.ID
			sp, err = browsers.StoreSpec(s)
		}
	}
	if err != nil {
		return api.TaskToken{}, err
	}
	bc := d.cfg.Cfg.Browsers()
	agent, err := bc.Agent(sp)
	if err != nil {
		return api.TaskToken{}, fmt.Errorf("%w: %w", apierr.ErrUnavailable, err)
	}
	if _, err := d.cfg.DB.UpsertTask(ctx, state.Task{ID: id, StoreID: storeID, Status: state.TaskRunning,
		LeaseUntil: time.Now().Add(d.cfg.Cfg.TaskLease)}); err != nil {
		return api.TaskToken{}, err
	}
	token, err := d.cfg.DB.MintTaskToken(ctx, id, storeID)
	if err != nil {
		return api.TaskToken{}, err
	}
	out := api.TaskToken{Token: token, TaskID: id, StoreID: storeID, Slug: sp.Slug,
		BinDir: d.cfg.Cfg.Path("bin", sp.Slug), GuardDir: d.cfg.Cfg.Path("bin", api.GuardDir),
		DownloadDir: d.cfg.DownloadDir(sp, id), AgentDir: d.cfg.Cfg.Path("agents", sp.Slug)}
	if err := agentArea(out.AgentDir, agent); err != nil {
		return api.TaskToken{}, err
	}
	if agent != nil {
		out.AgentUser = agent.Name
	}
	return out, nil
}

// agentArea makes a store's agent area (its agents' HOME and TMPDIR live in it): the agent user's, 0700.
func agentArea(dir string, agent *osuser.User) error {
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return fmt.Errorf("agent area: %w", err)
	}
	if agent == nil {
		return nil
	}
	for _, d := range []string{dir, filepath.Join(dir, "tmp")} {
		if err := agent.Chown(d); err != nil {
			return fmt.Errorf("agent area: %w", err)
		}
	}
	return nil
}
