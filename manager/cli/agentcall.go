package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"vibebrowser/manager/api"
)

// An agent's own call for its client (vibe-browser mcp, vibe-browser endpoint): on the owner's socket, or on
// the agents' socket with its task token (SPEC §14).

// agentClient is the manager client of an agent's call: the agents' socket with the task's token when
// VIBE_TASK_TOKEN is set (SPEC §14; vibe-browser agent sets it), else the owner's socket.
func agentClient(g *globals, task string) (*api.Client, error) {
	token := os.Getenv(api.TaskTokenEnv)
	switch {
	case token == "":
		return g.client(), nil
	case !api.ValidTaskToken(token):
		return nil, &usageError{api.TaskTokenEnv + " is not a task token (32 hex digits): use the one vibe-browser agent set, unchanged"}
	case task == "":
		return nil, &usageError{api.TaskTokenEnv + " is set without a task (--task or VIBE_TASK_ID): a task token is one task's"}
	}
	return &api.Client{Socket: api.AgentSocketPath(g.home), Token: token}, nil
}

// agentTarget is the client an agent's command asks for: its store (or the web browser), task, worker slot
// and how it is driven.
type agentTarget struct {
	store       string
	web         bool
	task        string
	worker, via string
}

// ensured is the answer to an agent's ensure: the request made (its client id, session name), the
// manager's answer, the manager client it went through, and the call that renews the task's lease.
type ensured struct {
	req    api.EnsureRequest
	resp   api.EnsureResponse
	client *api.Client
	renew  func(context.Context) error
}

// ensure asks for the target's client as the shim would, and returns its answer and the call that renews
// its task's lease (ensure again).
func (at agentTarget) ensure(g *globals) (ensured, error) {
	if at.task == "" {
		at.task = os.Getenv("VIBE_TASK_ID")
	}
	if at.task != "" && !api.ValidTaskID(at.task) {
		return ensured{}, &usageError{fmt.Sprintf("task id %q is not a task id: want %s", at.task, api.TaskIDForm)}
	}
	if at.worker != "" && at.task == "" {
		return ensured{}, &usageError{"--worker needs a task (--task or VIBE_TASK_ID): worker slots belong to a task; drop --worker"}
	}
	client, err := agentClient(g, at.task)
	if err != nil {
		return ensured{}, err
	}
	req, err := agentEnsureRequest(g, client, at)
	if err != nil {
		return ensured{}, err
	}
	resp, err := client.EnsureAgent(g.ctx, req, 0)
	return ensured{req: req, resp: resp, client: client, renew: func(ctx context.Context) error {
		_, err := client.EnsureSession(ctx, req)
		return err
	}}, err
}

// agentEnsureRequest is the client's ensure call: the store (or web browser) with the worker rules of its
// wrapper's config (SPEC §3), as the shim would make it.
func agentEnsureRequest(g *globals, client *api.Client, at agentTarget) (api.EnsureRequest, error) {
	storeID, dir, base := "", api.WebKey, api.WebSlug
	if !at.web {
		id, slug, err := storeOfAgent(g, client, at.store)
		if err != nil {
			return api.EnsureRequest{}, err
		}
		storeID, dir, base = id, slug, slug
	}
	worker := 0
	if at.worker != "" {
		cfg, err := api.LoadShimConfig(filepath.Join(g.home, "bin", dir, api.ShimConfigName))
		if err != nil {
			return api.EnsureRequest{}, fmt.Errorf("the worker slots are in the wrapper's config, which the manager writes: %w", err)
		}
		if worker, err = api.ParseWorker(at.worker, cfg.WorkerSlots); err != nil {
			return api.EnsureRequest{}, &usageError{err.Error()}
		}
	}
	buName, clientID := api.SessionNames(base, at.task, worker, false)
	return api.AgentRequest(storeID, at.task, buName, clientID, at.via), nil
}

// storeOfAgent resolves a store for an agent's call: on the owner's socket by asking the manager; with a
// task token from the store's wrapper config (the agents' socket serves no store lookups), so by its slug.
func storeOfAgent(g *globals, client *api.Client, ref string) (id, slug string, err error) {
	if client.Token == "" {
		s, err := client.GetStore(g.ctx, ref)
		return s.ID, s.Slug, err
	}
	cfg, err := api.LoadShimConfig(filepath.Join(g.home, "bin", ref, api.ShimConfigName))
	if err != nil || cfg.Kind != api.ShimKindStore {
		return "", "", &usageError{fmt.Sprintf("with %s set, name the store by its slug (its wrapper folder "+
			"%s): %q names none", api.TaskTokenEnv, filepath.Join(g.home, "bin", "<slug>"), ref)}
	}
	return cfg.StoreID, cfg.Slug, nil
}
