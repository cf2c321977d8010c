package wrapshim

// Exit codes of the shim. Agents and prompts depend on these numbers: new codes go at the end and nothing is
// ever renumbered.
const (
	// ExitUsage: a session rule was broken (flag, env, worker slot, session name) or the guard shim ran.
	// Fix the call as the message says; never retry it unchanged.
	ExitUsage = 2
	// ExitUnavailable: the manager could not be reached or refused to provide a browser. Retrying later may
	// work; the message carries the manager's reason.
	ExitUnavailable = 69
	// ExitWedged: the call timed out twice in a row for this session. The browser is unrecoverable for this
	// session: stop retrying and record the unfinished work as a gap.
	ExitWedged = 75
	// ExitConfig: the shim's own config beside it is missing or broken. Regenerate the wrapper (restart the
	// manager or run any store command).
	ExitConfig = 78
	// ExitNoRealCLI: the real browser-use CLI baked into the config is missing or not executable.
	ExitNoRealCLI = 127
	// ExitTimeout: the call timed out; the session's daemon was reloaded. Re-issue the call if it is safe.
	ExitTimeout = 142
	// ExitNoAnswer: --ask-human waited and nobody answered in time. Record the step as blocked on a person
	// (with what was asked) and go on with what does not need it; never re-ask in a loop.
	ExitNoAnswer = 79
	// ExitCantHelp: --ask-human got an answer: the person cannot help (their note, if any, is on stdout).
	// Do not ask again for this step: record it as blocked on a person.
	ExitCantHelp = 80
)
