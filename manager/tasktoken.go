package manager

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/manager/browsers"
	"vibebrowser/osuser"
	"vibebrowser/state"
)

// handleMintTaskToken is POST PathTaskToken, the launcher's call (vibe-browser agent, env --task; SPEC §14):
// the task is registered as running on its store, its token minted, and the agent's environment described.
// Only the owner's socket serves it.
func (m *Manager) handleMintTaskToken(r *http.Request) (any, error) {
	ctx := r.Context()
	id := r.PathValue("id")
	if !api.ValidTaskID(id) {
		return nil, fmt.Errorf("%w: task id %q: want %s", apierr.ErrBadRequest, id, api.TaskIDForm)
	}
	var req api.TaskTokenRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	var sp browsers.Spec
	var err error
	storeID := ""
	switch req.Store {
	case "":
		return nil, fmt.Errorf("%w: a task token is for one store: name it (a name, slug or id), or %s for the web browser",
			apierr.ErrBadRequest, api.WebSlug)
	case api.WebSlug, api.WebKey:
		sp, err = m.fleet.WebSpec(ctx)
	default:
		var s state.Store
		if s, err = m.findStore(ctx, req.Store); err == nil {
			storeID = s.ID
			sp, err = browsers.StoreSpec(s)
		}
	}
	if err != nil {
		return nil, err
	}
	bc := m.cfg.Browsers()
	agent, err := bc.Agent(sp)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", apierr.ErrUnavailable, err)
	}
	if _, err := m.db.UpsertTask(ctx, state.Task{ID: id, StoreID: storeID, Status: state.TaskRunning,
		LeaseUntil: time.Now().Add(m.cfg.TaskLease)}); err != nil {
		return nil, err
	}
	token, err := m.db.MintTaskToken(ctx, id, storeID)
	if err != nil {
		return nil, err
	}
	out := api.TaskToken{Token: token, TaskID: id, StoreID: storeID, Slug: sp.Slug,
		BinDir: m.cfg.Path("bin", sp.Slug), GuardDir: m.cfg.Path("bin", api.GuardDir),
		DownloadDir: m.downloadDir(sp, id), AgentDir: m.cfg.Path("agents", sp.Slug)}
	if err := m.agentArea(out.AgentDir, agent); err != nil {
		return nil, err
	}
	if agent != nil {
		out.AgentUser = agent.Name
	}
	return out, nil
}

// agentArea makes a store's agent area (its agents' HOME and TMPDIR live in it): the agent user's, 0700.
func (m *Manager) agentArea(dir string, agent *osuser.User) error {
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
