package timeline

import (
	"context"

	"vibebrowser/manager/api"
)

// Recordings take turns per browser (issue 33). A call's recording (its entry, then its shots) waits in its
// browser's lane and runs there, one at a time, in the order the calls were reported, on one goroutine that
// stays while the lane has work: a browser is asked for one capture at a time beside its agents, however many
// of them end a call at once, and a task's calls are recorded in their order.

// maxLane bounds the recordings waiting in one browser's lane. Past it a call is still recorded (its entry
// is the record), without its shots: the captures are what a busy browser cannot keep up with.
const maxLane = 64

// recording is one call's recording, waiting in its browser's lane.
type recording struct {
	w     Where
	task  string
	rep   api.CallReport
	b     Browser
	shoot bool // false past maxLane
}

// lane is one browser's waiting recordings; its goroutine runs them.
type lane struct {
	waiting []recording
}

// queueLocked puts rec in its browser's lane, and starts the lane's goroutine when the lane was idle. Each
// recording and each lane's goroutine counts in r.work until it is done.
func (r *Recorder) queueLocked(rec recording) {
	l := r.lanes[rec.w.Key]
	if l == nil {
		l = &lane{}
		r.lanes[rec.w.Key] = l
		r.work.Add(1)
		go r.runLane(rec.w.Key, l)
	}
	rec.shoot = len(l.waiting) < maxLane
	l.waiting = append(l.waiting, rec)
	r.work.Add(1)
}

// runLane runs lane l of browser key until it has nothing waiting.
func (r *Recorder) runLane(key string, l *lane) {
	defer r.work.Done()
	for {
		r.mu.Lock()
		if len(l.waiting) == 0 {
			delete(r.lanes, key)
			r.mu.Unlock()
			return
		}
		rec := l.waiting[0]
		l.waiting[0] = recording{}
		l.waiting = l.waiting[1:]
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(r.ctx, callWork)
		r.call(ctx, rec)
		cancel()
		r.work.Done()
	}
}
