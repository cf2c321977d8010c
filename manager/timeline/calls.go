package timeline

import (
	"context"
	"slices"
	"strings"
	"time"

	"vibebrowser/manager/api"
)

// passwordWait bounds the wait for the mux's look at the fields a call typed into.
const passwordWait = 2 * time.Second

// callWork bounds the whole recording of one call: its entry, then its shots.
const callWork = time.Minute

// Hidden stands for a password in a call's code and output.
const Hidden = "[password hidden]"

// Call records a shim's report of one of task's calls and then, in full mode, the shots of the tabs of
// the call's client whose pixels changed. It returns at once: the recording goes on in the background, after
// the call has returned, so the agent never waits for it, in turn with the other calls of its browser
// (lanes.go). b is the call's running browser (nil: none). A
// task whose timeline is full gets an error wrapping ErrFull, and nothing is recorded.
func (r *Recorder) Call(w Where, task string, rep api.CallReport, b Browser) error {
	if w.Mode == api.TimelineOff {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.ctx, passwordWait)
	err := r.room(ctx, w, task, api.EntryCall)
	cancel()
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.queueLocked(recording{w: w, task: task, rep: rep, b: b})
	}
	return nil
}

// call records rec's call: its entry, a fault for a call that timed out or wedged, then its shots.
func (r *Recorder) call(ctx context.Context, rec recording) {
	w, task, rep, b := rec.w, rec.task, rec.rep, rec.b
	if w.Mode == api.TimelineFull {
		if b != nil {
			pctx, cancel := context.WithTimeout(ctx, passwordWait)
			hide(&rep, b.PasswordTexts(pctx, rep.Client))
			cancel()
		}
	} else {
		rep.Args, rep.Code, rep.CodeCut, rep.Stdout, rep.StdoutCut, rep.Stderr, rep.StderrCut = nil, "", false, "", false, "", false
	}
	e, err := r.append(ctx, w, task, api.Entry{Client: rep.Client, Call: &rep}, "", 0)
	if err != nil {
		r.cfg.Log.Error().Err(err).Str("task", task).Msg("record a call")
		return
	}
	switch rep.Outcome {
	case api.CallTimeout:
		r.record(ctx, w, task, api.Entry{Client: rep.Client, InCall: e.Seq, Fault: &api.FaultEntry{What: api.FaultTimeout, Message: rep.Rule}})
	case api.CallWedged:
		r.record(ctx, w, task, api.Entry{Client: rep.Client, InCall: e.Seq, Fault: &api.FaultEntry{What: api.FaultWedge, Message: rep.Rule}})
	}
	if w.Mode == api.TimelineFull && b != nil && rec.shoot {
		r.shoot(ctx, w, task, rep.Client, e.Seq, b)
	}
}

// hide puts Hidden in place of every password text in the report's code, arguments, output and message.
func hide(rep *api.CallReport, secrets []string) {
	if len(secrets) == 0 {
		return
	}
	secrets = slices.Clone(secrets)
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) }) // a longer one first: it may hold a shorter
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		if s != "" {
			pairs = append(pairs, s, Hidden)
		}
	}
	rp := strings.NewReplacer(pairs...)
	for _, f := range []*string{&rep.Code, &rep.Stdout, &rep.Stderr, &rep.Rule} {
		*f = rp.Replace(*f)
	}
	for i := range rep.Args {
		rep.Args[i] = rp.Replace(rep.Args[i])
	}
}
