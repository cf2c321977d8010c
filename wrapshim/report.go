package wrapshim

import (
	"context"
	"time"

	"vibebrowser/manager/api"
)

// The call report (SPEC §15): when a task's call ends, the shim tells the manager's timeline what it was and
// how it ended, in one request bounded by reportTimeout, written whole and not waited for. The report is best
// effort: the exit status never depends on it.

// reportTimeout bounds the report: the agent never waits longer for it.
const reportTimeout = 50 * time.Millisecond

// callReport is one call's report as the shim fills it along the call.
type callReport struct {
	rep   api.CallReport
	task  string // "" : no task, no timeline
	token string
	mode  string // the store's timeline mode, from ensure; "" until then
}

// newReport starts the report of a call of task (its token, "" for the owner's socket). Its times are in UTC:
// written in the local zone, they would have the shim load the zone's file (the manager shows them in its own).
func newReport(task, token string, args []string) *callReport {
	return &callReport{task: task, token: token, rep: api.CallReport{Client: task, Args: args, Start: time.Now().UTC()}}
}

// forCall fills in the session and client the call's rules gave it.
func (r *callReport) forCall(c *Call) {
	r.rep.Client, r.rep.Session, r.rep.Slot, r.rep.Args = c.ClientID, c.BUName, c.Worker, c.Args
}

// full reports whether the call's code and output are kept.
func (r *callReport) full() bool { return r.mode == api.TimelineFull }

// send reports the call's end with its exit code and its outcome (rule: the shim's message
// for a call it refused or could not run), unless the store records nothing.
func (s *shim) send(r *callReport, end Ending, outcome, rule string) {
	if r.task == "" || r.mode == api.TimelineOff {
		return // a call that never reached ensure, which tells the mode, is reported: the manager decides
	}
	r.rep.End, r.rep.Exit, r.rep.Outcome, r.rep.Rule = time.Now().UTC(), s.codes(end), outcome, rule
	client := s.cfg.Client(r.token)
	client.Timeout = reportTimeout                           // a bound without a timer (api.Client.Timeout)
	_ = client.PostCall(context.Background(), r.task, r.rep) // best effort: the status already says how it went
}
