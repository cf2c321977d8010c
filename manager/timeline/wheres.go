package timeline

import (
	"context"
	"sync"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
)

// Where each step goes. A step names its browser's key; the store's slug (the shots' folder) and its own
// timeline setting say where it is kept and whether. Read from state for every step, they were a SQLite
// query per step (3.3% of the manager's CPU in the call bench's profile); the desk keeps them per store until
// state's stores change (state.DB.StoresVersion), so a `store set --timeline` applies from the next step.

// storeLine is what the timeline needs of a store.
type storeLine struct {
	slug     string
	timeline string // the store's own setting (browsers.Options.Timeline), "" for VIBE_TIMELINE's
}

// storeLines keeps each store's line as of one version of state's stores.
type storeLines struct {
	mu      sync.Mutex // guards the fields below
	version uint64     // the state.DB.StoresVersion the lines were read at
	byID    map[string]storeLine
}

// whereOf is the browser of a task's store id ("" or api.WebKey: the web browser) as the recorder sees it,
// and where its mode comes from (see Mode).
func (d *Desk) whereOf(ctx context.Context, storeID string) (Where, string, error) {
	if storeID == "" || storeID == api.WebKey {
		mode, from := d.modeOf("")
		return Where{Key: api.WebKey, Slug: api.WebKey, Mode: mode}, from, nil
	}
	l, err := d.lineOf(ctx, storeID)
	if err != nil {
		return Where{}, "", err
	}
	mode, from := d.modeOf(l.timeline)
	return Where{Key: storeID, Slug: l.slug, Mode: mode}, from, nil
}

// lineOf is store id's line: the one kept while state's stores have not changed since it was read, else read
// again.
func (d *Desk) lineOf(ctx context.Context, id string) (storeLine, error) {
	lines := &d.lines
	version := d.cfg.DB.StoresVersion() // before the read: a change during it moves it past the line's
	lines.mu.Lock()
	l, ok := lines.byID[id]
	if lines.version != version {
		ok = false
	}
	lines.mu.Unlock()
	if ok {
		return l, nil
	}
	sp, err := d.cfg.Fleet.SpecFor(ctx, id)
	if err != nil {
		return storeLine{}, err
	}
	l = storeLine{slug: sp.Slug, timeline: sp.Opts.Timeline}
	lines.mu.Lock()
	defer lines.mu.Unlock()
	if version < lines.version {
		return l, nil // a newer reader's lines stay: this one may be older than a change that reader saw
	}
	if version > lines.version || lines.byID == nil {
		lines.version, lines.byID = version, map[string]storeLine{}
	}
	lines.byID[id] = l
	return l, nil
}

// modeOf is the mode of a browser whose store's own setting is own ("" for none), and where it comes from:
// the store's own setting, else VIBE_TIMELINE.
func (d *Desk) modeOf(own string) (mode, from string) {
	if own != "" {
		return own, "store"
	}
	return d.cfg.Cfg.Timeline, "VIBE_TIMELINE"
}

// Mode is what sp's browser records, and where that comes from: the store's own setting, else
// VIBE_TIMELINE.
func (d *Desk) Mode(sp browsers.Spec) (mode, from string) { return d.modeOf(sp.Opts.Timeline) }
