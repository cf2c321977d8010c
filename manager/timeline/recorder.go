// Package timeline records what each task did, step by step, with the pictures of its tabs (SPEC §15).
package timeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/mux"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// Browser is a running browser's mux as the recorder uses it (package mux's operator API).
type Browser interface {
	ClientTabs(client string) []mux.TabInfo
	Thumbnail(ctx context.Context, targetID string, maxWidth, quality int) ([]byte, error)
	// PasswordTexts are the texts a client typed into password fields (hidden in its calls' entries).
	PasswordTexts(ctx context.Context, clientID string) []string
}

// Config is what New needs.
type Config struct {
	DB  *state.DB
	Dir string // <home>/timeline: the shots, in <slug>/<task>/
	// MaxBytes bounds a task's timeline, its entries and shots (VIBE_TIMELINE_MAX_MB): beyond it the oldest
	// shots are dropped; once the entries alone fill it, an agent's steps (calls, navigations, tabs, shots)
	// are no longer kept, while those a person needs (downloads, handoffs, takeovers, faults) still are.
	MaxBytes int64
	// Full, when set, is told each step not kept because its task's timeline is full.
	Full func(task, kind string)
	// Keep is how long entries are kept (VIBE_TIMELINE_KEEP_DAYS); 0 keeps them.
	Keep time.Duration
	Log  zerolog.Logger
	// Now is the recorder's clock (time.Now when nil): tests move it to see the retention prune.
	Now func() time.Time
}

// Where is the browser a task's step happened on.
type Where struct {
	Key  string // its store's id, or api.WebKey
	Slug string // the store's slug, or api.WebKey: the shots' folder
	Mode string // the store's timeline mode: api.TimelineFull, TimelineMeta or TimelineOff
}

// Recorder records the tasks' timelines. Its methods are safe for concurrent use.
type Recorder struct {
	cfg  Config
	work sync.WaitGroup // the calls being recorded or waiting to be, and their lanes' goroutines (lanes.go)
	ctx  context.Context
	stop context.CancelFunc // ends the calls' recording (Close, after its grace)

	mu      sync.Mutex
	changed chan struct{}       // closed at the next entry (Wait)
	shots   map[string]lastShot // target id -> its last shot
	used    map[string]int64    // task id -> the bytes its timeline takes (state.Timeline.Bytes), once read
	told    map[string]bool     // task id -> its timeline's fault "full" is recorded
	windows map[string]window   // task and client -> its newest call (callsteps.go)
	lanes   map[string]*lane    // browser key -> the recordings waiting for it (lanes.go)
	closed  bool
}

// New returns a recorder; Close waits for the calls it is still recording.
func New(cfg Config) *Recorder {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Recorder{cfg: cfg, ctx: ctx, stop: stop, changed: make(chan struct{}), shots: map[string]lastShot{},
		used: map[string]int64{}, told: map[string]bool{}, windows: map[string]window{}, lanes: map[string]*lane{}}
}

// Close waits up to grace for the calls still being recorded, then ends them; calls after it are not
// recorded.
func (r *Recorder) Close(grace time.Duration) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.work.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		r.stop()
		<-done
	}
	r.stop()
}

// TabClosed forgets a closed tab's last shot.
func (r *Recorder) TabClosed(tab string) {
	r.mu.Lock()
	delete(r.shots, tab)
	r.mu.Unlock()
}

// Record appends one step other than a call (a nav, tab, download, handoff, takeover or fault) to task's
// timeline: e's Client and its one kind field. Nothing is recorded when w's mode is off.
func (r *Recorder) Record(ctx context.Context, w Where, task string, e api.Entry) {
	if kind, _ := e.Body(); slices.Contains(linkedKinds, kind) {
		e.InCall = r.callAt(task, e.Client, r.cfg.Now())
	}
	r.record(ctx, w, task, e)
}

// record is Record of a step whose InCall is set.
func (r *Recorder) record(ctx context.Context, w Where, task string, e api.Entry) {
	if w.Mode == api.TimelineOff || task == "" {
		return
	}
	kind, _ := e.Body()
	if agents(kind) {
		if err := r.room(ctx, w, task, kind); err != nil {
			return
		}
	}
	if _, err := r.append(ctx, w, task, e, "", 0); err != nil {
		r.cfg.Log.Error().Err(err).Str("task", task).Str("kind", kind).Msg("record a timeline entry")
	}
}

// agents reports whether entries of kind come of what an agent does, as many as it likes: once its
// timeline is full they are not kept. The others a person needs, and their numbers have bounds of their own.
func agents(kind string) bool {
	switch kind {
	case api.EntryCall, api.EntryShot, api.EntryNav, api.EntryTab:
		return true
	}
	return false
}

// ErrFull is the refusal of an agent's step of a task whose timeline takes its Config.MaxBytes.
var ErrFull = errors.New("the task's timeline is full")

// room checks that task's timeline has room for an agent's step of kind; when it has none it says so to
// Config.Full and, the first time, in a fault entry of the timeline itself.
func (r *Recorder) room(ctx context.Context, w Where, task, kind string) error {
	r.mu.Lock()
	n, known := r.used[task]
	r.mu.Unlock()
	if !known {
		var err error
		if n, err = r.cfg.DB.Timeline().Bytes(ctx, task); err != nil {
			return err
		}
		r.mu.Lock()
		if _, raced := r.used[task]; !raced {
			r.used[task] = n
		}
		r.mu.Unlock()
	}
	if n >= r.cfg.MaxBytes {
		// The oldest shots make room first, an eighth of it at a time; only entries that fill it alone
		// stop an agent's steps.
		files, total, err := r.cfg.DB.Timeline().CapShots(ctx, task, r.cfg.MaxBytes-r.cfg.MaxBytes/8)
		if err != nil {
			return err
		}
		r.setUsed(task, total, files)
		n = total
	}
	if n < r.cfg.MaxBytes {
		return nil
	}
	if r.cfg.Full != nil {
		r.cfg.Full(task, kind)
	}
	r.mu.Lock()
	told := r.told[task]
	r.told[task] = true
	r.mu.Unlock()
	if !told {
		msg := fmt.Sprintf("this task's timeline holds %d MiB, its quota (VIBE_TIMELINE_MAX_MB=%d): its calls, "+
			"navigations, tabs and shots are no longer kept; downloads, handoffs, takeovers and faults still are",
			n>>20, r.cfg.MaxBytes>>20)
		r.Record(ctx, w, task, api.Entry{Fault: &api.FaultEntry{What: api.FaultQuota, Message: msg}})
	}
	return fmt.Errorf("%w: task %s's timeline holds %d MiB, its quota (VIBE_TIMELINE_MAX_MB=%d): this %s is not kept",
		ErrFull, task, n>>20, r.cfg.MaxBytes>>20, kind)
}

// append stores entry v (its Client, InCall and body; a shot's file and its size) and wakes the waiters. A
// call's entry takes its client's steps recorded in its window as it is stored (callsteps.go).
func (r *Recorder) append(ctx context.Context, w Where, task string, v api.Entry, file string, size int64) (state.TimelineEntry, error) {
	kind, body := v.Body()
	if body == nil {
		return state.TimelineEntry{}, fmt.Errorf("a timeline entry of task %s with no body: %w", task, errdefs.ErrInvalid)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return state.TimelineEntry{}, err
	}
	store := w.Key
	if store == api.WebKey {
		store = ""
	}
	e := state.TimelineEntry{TaskID: task, StoreID: store, ClientID: v.Client, At: r.cfg.Now(), Kind: kind, Data: b,
		File: file, Bytes: size, InCall: v.InCall}
	var cw window
	var linked bool
	if v.Call != nil {
		cw, linked = callWindow(*v.Call)
	}
	if linked {
		e, err = r.cfg.DB.Timeline().AppendCall(ctx, e, cw.start, cw.end, linkedKinds)
	} else {
		e, err = r.cfg.DB.Timeline().Append(ctx, e)
	}
	if err != nil {
		return e, err
	}
	if linked {
		cw.seq = e.Seq
		r.keepWindow(task, v.Client, cw)
	}
	r.mu.Lock()
	if n, known := r.used[task]; known {
		r.used[task] = n + int64(len(e.Data)) + size
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	return e, nil
}

// Changed is closed at the next entry of any task; a caller takes a new one after each.
func (r *Recorder) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Entries returns task's entries after seq after, as the API prints them.
func (r *Recorder) Entries(ctx context.Context, task string, after int64) ([]api.Entry, error) {
	es, err := r.cfg.DB.Timeline().List(ctx, task, after, 0)
	if err != nil {
		return nil, err
	}
	return views(es)
}

// CallSteps returns the steps of task's call seq (those whose InCall it is), as the API prints them.
func (r *Recorder) CallSteps(ctx context.Context, task string, seq int64) ([]api.Entry, error) {
	es, err := r.cfg.DB.Timeline().OfCall(ctx, task, seq)
	if err != nil {
		return nil, err
	}
	return views(es)
}

func views(es []state.TimelineEntry) ([]api.Entry, error) {
	out := make([]api.Entry, 0, len(es))
	for _, e := range es {
		v, err := entryView(e)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// entryView is a stored entry as the API prints it.
func entryView(e state.TimelineEntry) (api.Entry, error) {
	v := api.Entry{Seq: e.Seq, At: e.At, Kind: e.Kind, Client: e.ClientID, Slot: api.ClientSlot(e.TaskID, e.ClientID),
		InCall: e.InCall}
	var dst any
	switch v.Kind {
	case api.EntryCall:
		dst = fill(&v.Call)
	case api.EntryShot:
		dst = fill(&v.Shot)
	case api.EntryNav:
		dst = fill(&v.Nav)
	case api.EntryTab:
		dst = fill(&v.Tab)
	case api.EntryDownload:
		dst = fill(&v.Download)
	case api.EntryHandoff:
		dst = fill(&v.Handoff)
	case api.EntryTakeover:
		dst = fill(&v.Takeover)
	case api.EntryFault:
		dst = fill(&v.Fault)
	default:
		return v, fmt.Errorf("timeline entry %d of task %s: unknown kind %q", e.Seq, e.TaskID, e.Kind)
	}
	if err := json.Unmarshal(e.Data, dst); err != nil {
		return v, fmt.Errorf("timeline entry %d of task %s: %w", e.Seq, e.TaskID, err)
	}
	if v.Shot != nil {
		v.Shot.Bytes = e.Bytes // 0 once the size cap dropped its file
	}
	v.From = from(v)
	return v, nil
}

// from is whose words entry v holds: a call's report is the agent's, and so are the faults it told and a
// handoff's question; a handoff's note is the person's.
func from(v api.Entry) string {
	switch {
	case v.Call != nil,
		v.Fault != nil && (v.Fault.What == api.FaultTimeout || v.Fault.What == api.FaultWedge),
		v.Handoff != nil && v.Handoff.Question != "":
		return api.FromAgent
	case v.Handoff != nil && v.Handoff.Note != "":
		return api.FromPerson
	}
	return api.FromManager
}

// fill sets an entry's kind field to a new value and returns it, for the entry's JSON to be read into.
func fill[T any](field **T) *T {
	*field = new(T)
	return *field
}

// ErrNoShot is Shot's answer for an entry that is no shot, or whose file is gone; of class errdefs.ErrNotFound.
var ErrNoShot = errdefs.NotFound("no such shot")

// Shot reads the JPEG of task's shot entry seq.
func (r *Recorder) Shot(ctx context.Context, task string, seq int64) ([]byte, error) {
	es, err := r.cfg.DB.Timeline().List(ctx, task, seq-1, 1)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 || es[0].Seq != seq || es[0].Kind != api.EntryShot || es[0].File == "" {
		return nil, fmt.Errorf("entry %d of task %s: %w", seq, task, ErrNoShot)
	}
	b, err := os.ReadFile(filepath.Join(r.cfg.Dir, es[0].File))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("entry %d of task %s: its file is gone: %w", seq, task, ErrNoShot)
	}
	return b, err
}
