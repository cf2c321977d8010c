package timeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/manager/tasks"
	"vibebrowser/mux"
	"vibebrowser/mux/clientid"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// The task timeline (SPEC §15) in the daemon: the shims report each call's end, the muxes each tab's steps,
// the manager the downloads, handoffs and faults; the Desk puts them on their tasks' browsers and the
// Recorder keeps them, and the API, the CLI and the UI read them.

// follow bounds a follower's wait for the next entry (GET PathTaskTimeline?wait=1).
const follow = 25 * time.Second

// DeskConfig is what the desk needs of the daemon around it.
type DeskConfig struct {
	Cfg   *config.Config
	DB    *state.DB
	Fleet *browsers.Fleet
	Ctx   context.Context // the daemon's life
	Log   zerolog.Logger  // the manager's
	Root  zerolog.Logger  // the daemon's root logger: the recorder's derives from it
	Full  func()          // a step not kept: its task's timeline is full (VIBE_TIMELINE_MAX_MB)
	Cut   func()          // a call report cut to SPEC §15's bounds
	// Remote, when set, is client's browser on a store key that runs on another host (SPEC §19), nil for
	// none: a call's shots and hidden passwords are asked of that host, and kept here.
	Remote func(key, client string) Browser
}

// Desk is the daemon's timeline: the Recorder, and where each task's steps come from.
type Desk struct {
	*Recorder
	cfg   DeskConfig
	lines storeLines // what the steps need of each store (wheres.go)
}

// NewDesk is the daemon's timeline, its recorder on the daemon's configuration.
func NewDesk(cfg DeskConfig) *Desk {
	c := cfg.Cfg
	return &Desk{cfg: cfg, Recorder: New(Config{DB: cfg.DB, Dir: c.Path("timeline"),
		MaxBytes: int64(c.TimelineMaxMB) << 20, Keep: time.Duration(c.TimelineKeepDays) * 24 * time.Hour,
		Full: func(string, string) { cfg.Full() },
		Log:  cfg.Root.With().Str("component", "timeline").Logger()})}
}

// Step appends step e of task on the browser key to its timeline (a no-op for no task), in the mode the
// store has now (a running mux's spec is the one it started with).
func (d *Desk) Step(key, task string, e api.Entry) {
	if task == "" {
		return
	}
	ctx, cancel := context.WithTimeout(d.cfg.Ctx, 10*time.Second)
	defer cancel()
	w, _, err := d.whereOf(ctx, key)
	if err != nil {
		kind, _ := e.Body()
		d.cfg.Log.Warn().Err(err).Str("task", task).Str("kind", kind).Msg("a timeline step of a browser that is gone")
		return
	}
	d.Record(ctx, w, task, e)
}

// TabStep is a mux's Timeline hook: a step of one of a task's tabs.
func (d *Desk) TabStep(sp browsers.Spec, ev mux.TimelineEvent) {
	task := clientid.OwnerDir(ev.Client)
	if !api.ValidTaskID(task) {
		return // aux, manual, discovery clients: no task's
	}
	e := api.Entry{Client: ev.Client}
	switch ev.Kind {
	case mux.TabCreated, mux.TabClosed:
		event := api.TabCreated
		if ev.Kind == mux.TabClosed {
			event = api.TabClosed
			d.TabClosed(ev.Tab)
		}
		e.Tab = &api.TabEntry{Tab: ev.Tab, Event: event, URL: ev.URL}
	case mux.TabNavigated:
		e.Nav = &api.NavEntry{Tab: ev.Tab, URL: ev.URL, Title: ev.Title}
	case mux.HoldTaken, mux.HoldReleased:
		event := api.TakeoverTook
		if ev.Kind == mux.HoldReleased {
			event = api.TakeoverGave
		}
		e.Takeover = &api.TakeoverEntry{Tab: ev.Tab, Event: event, By: ev.By, Why: ev.Why}
	default:
		return
	}
	d.Step(sp.Key, task, e)
}

// EventStep puts the events that hit a task into its timeline: its handoffs, and its browser's death or
// relaunch under it, or its login set back at a launch.
func (d *Desk) EventStep(kind, key string, ev api.Event) {
	switch kind {
	case api.EventHandoffRequested, api.EventHandoffAnswered, api.EventHandoffTimedOut, api.EventHandoffCancelled:
		h, err := d.cfg.DB.GetHandoff(d.cfg.Ctx, ev.Handoff)
		if err != nil {
			return
		}
		entry := api.HandoffEntry{ID: h.ID, Status: string(h.Status), Note: h.Note}
		if kind == api.EventHandoffRequested {
			entry.Question = h.Reason
		}
		d.Step(key, h.TaskID, api.Entry{Client: h.ClientID, Handoff: &entry})
	case api.EventBrowserDied, api.EventBrowserRelaunched, api.EventLoginRestored:
		what := api.FaultCrash
		switch kind {
		case api.EventBrowserRelaunched:
			what = api.FaultRelaunch
		case api.EventLoginRestored:
			what = api.FaultLoginRestored
		}
		tasks, err := d.cfg.DB.ListActiveTasks(d.cfg.Ctx, time.Now())
		if err != nil {
			return
		}
		for _, t := range tasks {
			if t.StoreID == ev.StoreID && t.Active(time.Now()) {
				d.Step(key, t.ID, api.Entry{Fault: &api.FaultEntry{What: what, Message: ev.Message}})
			}
		}
	}
}

// Report checks a call report, cuts it to SPEC §15's bounds (it comes from the agent's side, whatever
// the shim keeps) and hands it to the recorder, with the call's running browser; a task whose timeline is
// full (VIBE_TIMELINE_MAX_MB) is refused, naming the quota.
func (d *Desk) Report(ctx context.Context, task, storeID string, rep api.CallReport) error {
	// A task's calls on its store's aux session (SPEC §20: its token opens it) are its calls too.
	if clientid.OwnerDir(rep.Client) != task && rep.Client != api.AuxClient {
		return fmt.Errorf("%w: client %q is not task %s's: a task reports its own calls (client %s, %s-wN or %s)",
			errdefs.ErrInvalid, rep.Client, task, task, task, api.AuxClient)
	}
	if rep.Session != "" && !api.ValidBUName(rep.Session) {
		return fmt.Errorf("%w: session %q must match [A-Za-z0-9_-]{1,64}", errdefs.ErrInvalid, rep.Session)
	}
	if rep.Cut() {
		d.cfg.Cut()
	}
	w, _, err := d.whereOf(ctx, storeID)
	if err != nil {
		return err
	}
	var b Browser
	if in := d.cfg.Fleet.Current(w.Key); in != nil {
		b = struct {
			*mux.Operator
			*mux.Taps
		}{in.Mux().Operator(), in.Mux().Taps()}
	} else if d.cfg.Remote != nil && w.Key != api.WebKey {
		b = d.cfg.Remote(w.Key, rep.Client)
	}
	if err := d.Call(w, task, rep, b); errors.Is(err, ErrFull) {
		return fmt.Errorf("%w: %w", errdefs.ErrQuota, err)
	} else if err != nil {
		return err
	}
	return nil
}

// Follow is task id's timeline after seq after, once it has entries there: it waits for the next entry
// while the task is live, for at most a follower's wait.
func (d *Desk) Follow(ctx context.Context, id string, after int64) (api.Timeline, error) {
	ctx, cancel := context.WithTimeout(ctx, follow)
	defer cancel()
	for {
		changed := d.Changed()
		tl, err := d.Task(ctx, id, after)
		if err != nil || len(tl.Entries) > 0 || !tl.Live {
			return tl, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return tl, nil
		}
	}
}

// Task is a task's timeline, its entries after seq after.
func (d *Desk) Task(ctx context.Context, id string, after int64) (api.Timeline, error) {
	t, err := d.cfg.DB.GetTask(ctx, id)
	if err != nil {
		return api.Timeline{}, err
	}
	tl := api.Timeline{Task: tasks.View(t), Live: t.Active(time.Now())}
	if w, from, err := d.whereOf(ctx, t.StoreID); err == nil {
		tl.Task.StoreSlug = w.Slug
		tl.Mode, tl.ModeFrom = w.Mode, from
	} else {
		tl.Mode, tl.ModeFrom = d.modeOf("")
	}
	if tl.Entries, err = d.Entries(ctx, id, after); err != nil {
		return api.Timeline{}, err
	}
	return tl, nil
}
