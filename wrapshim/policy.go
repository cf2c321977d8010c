package wrapshim

import (
	"fmt"
	"strings"

	"vibebrowser/manager/api"
)

// RuleError is a refused call: the message names the rule and the allowed form. It ends the call with EndUsage.
type RuleError struct{ Msg string }

func (e *RuleError) Error() string { return e.Msg }

func refuse(format string, args ...any) error { return &RuleError{Msg: fmt.Sprintf(format, args...)} }

// blockedFlags point the real CLI at another browser or another profile; the shim owns the endpoint.
var blockedFlags = []string{"--cdp-url", "--cdp-ws", "--mcp", "--connect", "--profile"}

// Call is a policy-checked invocation: the arguments for the real CLI and the session identity.
type Call struct {
	Args     []string // what the real CLI receives, shim flags removed
	Worker   int      // the --worker slot, 0 for none
	Aux      bool     // --session <slug>-aux
	TaskID   string   // VIBE_TASK_ID, validated, "" for none
	Token    string   // VIBE_TASK_TOKEN, validated, "" for none: the shim then calls the agents' socket
	BUName   string   // browser-use session name (BU_NAME)
	ClientID string   // mux client id
}

// Plan applies every session rule of SPEC §3 to the agent's arguments and environment (as os.Environ
// returns it) and derives BU_NAME and the mux client id. Any violation is a *RuleError.
func Plan(cfg *api.ShimConfig, args, environ []string) (*Call, error) {
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "BU_") {
			return nil, refuse("%s is set in your environment, but the shim owns every BU_* variable "+
				"(it sets the session and the browser endpoint itself): unset it and call browser-use again", name)
		}
	}
	task, token := lookupTask(environ)
	if task != "" && !api.ValidTaskID(task) {
		return nil, refuse("VIBE_TASK_ID %q is not a task id: it must be %s, as the agent launcher sets it", task, api.TaskIDForm)
	}
	switch {
	case token != "" && !api.ValidTaskToken(token):
		return nil, refuse("%s is not a task token (32 hex digits): use the one vibe-browser agent set, unchanged", api.TaskTokenEnv)
	case token != "" && task == "":
		return nil, refuse("%s is set without VIBE_TASK_ID: a task token is one task's; run the agent through "+
			"vibe-browser agent --task ID, which sets both", api.TaskTokenEnv)
	}
	call := &Call{TaskID: task, Token: token}
	session := ""
	sawSession, sawWorker := false, false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, value, hasValue := strings.Cut(arg, "=")
		if !strings.HasPrefix(name, "--") {
			call.Args = append(call.Args, arg)
			continue
		}
		for _, b := range blockedFlags {
			if name == b {
				return nil, refuse("%s is not allowed: the shim connects browser-use to this store's browser "+
					"itself; drop the flag and call browser-use with your code on stdin", b)
			}
		}
		if name != "--session" && name != "--worker" {
			call.Args = append(call.Args, arg)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, refuse("%s needs a value: %s", name, allowedForm(cfg, name))
			}
			i++
			value = args[i]
		}
		if name == "--session" {
			if sawSession {
				return nil, refuse("--session was given twice: %s", allowedForm(cfg, name))
			}
			sawSession, session = true, value
			continue
		}
		if sawWorker {
			return nil, refuse("--worker was given twice: %s", allowedForm(cfg, name))
		}
		sawWorker = true
		n, err := parseWorker(cfg, value)
		if err != nil {
			return nil, err
		}
		call.Worker = n
	}
	if sawSession {
		if sawWorker {
			return nil, refuse("--session and --worker cannot be combined: a worker slot is a slot on the main " +
				"store browser; use either --worker N or --session <slug>-aux")
		}
		if cfg.Kind != api.ShimKindStore || session != cfg.Slug+"-aux" {
			return nil, refuse("--session %q is not allowed: the session is assigned automatically; %s",
				session, allowedForm(cfg, "--session"))
		}
		call.Aux = true
	}
	if call.Worker > 0 && task == "" {
		return nil, refuse("--worker needs VIBE_TASK_ID: worker slots belong to a task; run browser-use " +
			"from the task's agent, or drop --worker")
	}
	call.BUName, call.ClientID = names(cfg, call)
	if !api.ValidBUName(call.BUName) {
		return nil, refuse("session name %q is not valid for browser-use: it must match [A-Za-z0-9_-]{1,64}",
			call.BUName)
	}
	return call, nil
}

// lookupTask is the VIBE_TASK_ID and VIBE_TASK_TOKEN of environ, as they are.
func lookupTask(environ []string) (task, token string) {
	for _, kv := range environ {
		switch name, value, _ := strings.Cut(kv, "="); name {
		case "VIBE_TASK_ID":
			task = value
		case api.TaskTokenEnv:
			token = value
		}
	}
	return task, token
}

// taskEnv is environ's task and token when both are well formed (a token may be absent), for the report of
// a call the rules refused; else none.
func taskEnv(environ []string) (task, token string) {
	task, token = lookupTask(environ)
	if !api.ValidTaskID(task) || token != "" && !api.ValidTaskToken(token) {
		return "", ""
	}
	return task, token
}

// parseWorker reads a --worker value (api.ParseWorker); its refusal is a *RuleError.
func parseWorker(cfg *api.ShimConfig, value string) (int, error) {
	n, err := api.ParseWorker(value, cfg.WorkerSlots)
	if err != nil {
		return 0, &RuleError{Msg: err.Error()}
	}
	return n, nil
}

func allowedForm(cfg *api.ShimConfig, flag string) string {
	if flag == "--worker" {
		return api.WorkerForm(cfg.WorkerSlots)
	}
	if cfg.Kind == api.ShimKindStore {
		return fmt.Sprintf("the only override is --session %s-aux (this store's auxiliary session)", cfg.Slug)
	}
	return "the web browser has no session override; drop --session"
}

// names derives BU_NAME and the mux client id (api.SessionNames).
func names(cfg *api.ShimConfig, c *Call) (buName, clientID string) {
	base := cfg.Slug
	if cfg.Kind == api.ShimKindWeb {
		base = api.WebSlug
	}
	return api.SessionNames(base, c.TaskID, c.Worker, c.Aux)
}
