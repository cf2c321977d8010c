package timeline

import (
	"time"

	"vibebrowser/manager/api"
)

// Steps belong to their call (issue 35). A navigation, tab, download or fault of a client that happens
// while one of its calls runs carries that call's seq (api.Entry.InCall), so that the task page draws it
// inside the call's card. The shim reports a call only at its end, so the steps are recorded first: the
// call's entry takes them as it is stored (state.Timeline.AppendCall, by the call's start and end), and a step of
// the client recorded after the report but from within the call's time (a tap that came late) finds the
// call among the recent ones (window).

// callLag is how long after a call's end a step of its client still counts as the call's: the taps
// report what the browser did a little after it happened.
const callLag = 250 * time.Millisecond

// maxWindows bounds the recent calls the recorder keeps, one per task and client.
const maxWindows = 4096

// window is one client's newest call: its seq and when it ran.
type window struct {
	seq        int64
	start, end time.Time
}

// linkedKinds are the kinds of steps that can belong to a call.
var linkedKinds = []string{api.EntryNav, api.EntryTab, api.EntryDownload, api.EntryFault}

// callWindow is the time in which the steps of rep's call happened: from its start to callLag past its end.
// A report that does not say (no client, no start, an end before its start) has none: ok is false.
func callWindow(rep api.CallReport) (w window, ok bool) {
	if rep.Client == "" || rep.Start.IsZero() || rep.End.Before(rep.Start) {
		return window{}, false
	}
	return window{start: rep.Start, end: rep.End.Add(callLag)}, true
}

// keepWindow keeps the window of client's call seq (its steps recorded before its report were linked with its
// entry, state.Timeline.AppendCall) for its steps that come after.
func (r *Recorder) keepWindow(task, client string, w window) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.windows) >= maxWindows {
		for k, old := range r.windows {
			if old.end.Before(r.cfg.Now().Add(-time.Minute)) {
				delete(r.windows, k)
			}
		}
	}
	if len(r.windows) < maxWindows {
		r.windows[task+"\x00"+client] = w
	}
}

// callAt is the seq of client's call that was running at at, 0 for none known.
func (r *Recorder) callAt(task, client string, at time.Time) int64 {
	if client == "" {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.windows[task+"\x00"+client]
	if !ok || at.Before(w.start) || at.After(w.end) {
		return 0
	}
	return w.seq
}
