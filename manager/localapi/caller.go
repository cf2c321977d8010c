package localapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/manager/browsers"
	"vibebrowser/mux/clientid"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// The agents' door (SPEC §14): run/agent.sock, which any user may connect to, serves a task's own calls
// (ensure, events, its handoffs, its downloads) to the peer that is its store's agent user and presents the
// task's token. Everything else stays on run/manager.sock, the owner's.

// Caller is who a request comes from, set by the server that accepted its connection: the owner (on the
// owner's socket, whose listener admits only the manager's own uid), or a task (on the agents' socket, by its
// token and its peer's uid).
type Caller struct {
	task *taskCall // nil for the owner
}

// Owner reports whether the caller is the manager's own user on the owner's socket.
func (c Caller) Owner() bool { return c.task == nil }

// taskCall is an admitted call on the agents' socket: the task its token stands for.
type taskCall struct {
	token state.TaskToken
	kind  string // api.KindStore or api.KindWeb
	name  string // its browser's, for messages: "store Acme", "the web browser"
	base  string // its sessions' base name: the store's slug, or api.WebSlug
}

// callerOf is the caller of r: the owner on the owner's socket, else the task whose token r presents (admit).
func (h *Handler) callerOf(r *http.Request) (Caller, error) {
	if !onAgents(r) {
		return Caller{}, nil
	}
	t, err := h.admit(r)
	if err != nil {
		return Caller{}, err
	}
	return Caller{task: &t}, nil
}

// admit checks a call's token and peer: a live task token (401 without one), presented by the store's
// agent user (the manager's own user for a store without one).
func (h *Handler) admit(r *http.Request) (taskCall, error) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || token == "" {
		return taskCall{}, fmt.Errorf("%w: %s serves a task's own calls: send Authorization: Bearer $%s, the "+
			"token vibe-browser agent gives the task", apierr.ErrUnauthorized, api.AgentSocketRel, api.TaskTokenEnv)
	}
	tt, err := h.DB.LookupTaskToken(r.Context(), token)
	if errors.Is(err, errdefs.ErrNotFound) {
		return taskCall{}, fmt.Errorf("%w: this task token was never minted, or its task has ended: start the "+
			"task again with vibe-browser agent", apierr.ErrUnauthorized)
	}
	if err != nil {
		return taskCall{}, err
	}
	uid := peerOf(r)
	sp, want, who, err := h.agentUID(r.Context(), tt.StoreID)
	if err != nil {
		return taskCall{}, err
	}
	if uid != want {
		return taskCall{}, fmt.Errorf("%w: task %s's token is for %s: only its agent user (%s, uid %d) may present "+
			"it, and this caller runs as uid %d", apierr.ErrForbidden, tt.TaskID, sp.Name, who, want, uid)
	}
	c := taskCall{token: tt, kind: api.KindStore, name: sp.Name, base: sp.Slug}
	if tt.StoreID == "" {
		c.kind, c.base = api.KindWeb, api.WebSlug
	}
	return c, nil
}

// agentUID is who may call for a store's tasks ("" for the web browser), with the store's spec: its agent
// user, else the manager's own user.
func (h *Handler) agentUID(ctx context.Context, storeID string) (browsers.Spec, int, string, error) {
	var sp browsers.Spec
	var err error
	if storeID == "" {
		sp, err = h.Fleet.WebSpec(ctx)
	} else {
		sp, err = h.Fleet.SpecFor(ctx, storeID)
	}
	if err != nil {
		return sp, 0, "", err
	}
	bc := h.Cfg.Browsers()
	agent, err := bc.Agent(sp)
	if err != nil {
		return sp, 0, "", err
	}
	if agent == nil {
		return sp, os.Getuid(), "the manager's own user", nil
	}
	return sp, agent.UID, agent.Name, nil
}

// ownClient checks that a task's call names its own store and task (filling what it leaves out) and one of
// its own clients; the owner may name any.
func (c Caller) ownClient(kind, storeID, taskID *string, clientID string) error {
	if c.task == nil {
		return nil
	}
	if err := c.task.own(kind, storeID, taskID); err != nil {
		return err
	}
	return c.task.ownClient(clientID)
}

// own checks that a request names the caller's own store and task, filling what it leaves out.
func (c *taskCall) own(kind, storeID, taskID *string) error {
	if *kind == "" {
		*kind = c.kind
	}
	if *taskID == "" {
		*taskID = c.token.TaskID
	}
	switch {
	case *kind != c.kind || *kind == api.KindStore && *storeID != c.token.StoreID:
		return c.notOwnStore("")
	case *taskID != c.token.TaskID:
		return fmt.Errorf("%w: this task token is task %s's: a task calls only as itself, not as task %s",
			apierr.ErrForbidden, c.token.TaskID, *taskID)
	}
	return nil
}

// notOwnStore is the refusal of a call for another store than the token's (SPEC §20: 403, never an answer
// about another store, not even an empty one); what says what the call asked for, or "".
func (c *taskCall) notOwnStore(what string) error {
	if what != "" {
		what = " (" + what + ")"
	}
	return fmt.Errorf("%w: this task token is for %s: a task calls only for its own store%s", apierr.ErrForbidden, c.name, what)
}

// ownClient checks that a mux client id is one of the caller's task's own (the task id, or its -wN worker),
// or its store's aux session, which every task of the store may open (SPEC §3's --session <slug>-aux; the
// web browser has none). The caller has checked the request's store against the token's (own).
func (c *taskCall) ownClient(id string) error {
	if id == api.AuxClient && c.kind == api.KindStore {
		return nil
	}
	if clientid.OwnerDir(id) != c.token.TaskID {
		aux := ""
		if c.kind == api.KindStore {
			aux = ", or its store's " + api.AuxClient
		}
		return fmt.Errorf("%w: client %s is not task %s's: a task connects as its own clients only (%s or %s-wN%s)",
			apierr.ErrForbidden, id, c.token.TaskID, c.token.TaskID, c.token.TaskID, aux)
	}
	return nil
}

// ownSession checks that a shim's report names a session of the caller's task (SPEC §3's table): its own,
// one of its --worker slots', or its store's aux session.
func (c *taskCall) ownSession(buName string, slots int) error {
	own, _ := api.SessionNames(c.base, c.token.TaskID, 0, false)
	forms := own
	if buName == own {
		return nil
	}
	for n := 1; n <= slots; n++ {
		if bu, _ := api.SessionNames(c.base, c.token.TaskID, n, false); buName == bu {
			return nil
		}
	}
	if slots > 0 {
		forms += fmt.Sprintf(", %s-wN with N from 1 to %d", own, slots)
	}
	if c.kind == api.KindStore {
		aux, _ := api.SessionNames(c.base, c.token.TaskID, 0, true)
		if buName == aux {
			return nil
		}
		forms += ", " + aux
	}
	return fmt.Errorf("%w: session %q is not task %s's: a shim reports only on its task's own sessions (%s)",
		apierr.ErrForbidden, buName, c.token.TaskID, forms)
}
