package wrapshim

// Ending is how a call ended. Zero or more is the real CLI's own exit status (128+signal for a signalled
// one), passed on as it is; a negative Ending is one of the shim's own endings below, which the shim's main
// alone turns into its exit code (cmd/wrapshim/exitcodes.go, the one list agents and prompts depend on).
type Ending int

// The shim's own endings.
const (
	// EndUsage: a session rule was broken (flag, env, worker slot, session name) or the guard shim ran.
	// Fix the call as the message says; never retry it unchanged.
	EndUsage Ending = -1 - iota
	// EndUnavailable: the manager could not be reached or refused to provide a browser. Retrying later may
	// work; the message carries the manager's reason.
	EndUnavailable
	// EndWedged: the call timed out twice in a row for this session. The browser is unrecoverable for this
	// session: stop retrying and record the unfinished work as a gap.
	EndWedged
	// EndConfig: the shim's own config beside it is missing or broken. Regenerate the wrapper (restart the
	// manager or run any store command).
	EndConfig
	// EndNoRealCLI: the real browser-use CLI baked into the config is missing or not executable.
	EndNoRealCLI
	// EndTimeout: the call timed out; the session's daemon was reloaded. Re-issue the call if it is safe.
	EndTimeout
	// EndNoAnswer: --ask-human waited and nobody answered in time. Record the step as blocked on a person
	// (with what was asked) and go on with what does not need it; never re-ask in a loop.
	EndNoAnswer
	// EndCantHelp: --ask-human got an answer: the person cannot help (their note, if any, is on stdout).
	// Do not ask again for this step: record it as blocked on a person.
	EndCantHelp
)

// ExitCodes turns an Ending into the process's exit code; the shim's main passes its one list to Main.
type ExitCodes func(Ending) int
