package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/cluster"
	"vibebrowser/manager/config"
	"vibebrowser/manager/tasks"
	"vibebrowser/manager/timeline"
	"vibebrowser/manager/ui"
	"vibebrowser/mux"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// uiSource is what the web UI reads of the manager (ui.Source): the same status and events the API
// prints, read in-process.
type uiSource struct{ m *Manager }

func (s uiSource) Status(ctx context.Context) (api.Status, error) { return s.m.Status(ctx) }

func (s uiSource) Events() []api.Event { return s.m.events.list() }

// Cluster is this host's cluster as the UI sees it (SPEC §19 "One pane"); nil on a single host.
func (s uiSource) Cluster() ui.Cluster {
	if s.m.cluster == nil {
		return nil
	}
	return uiCluster{s.m}
}

// uiCluster is the UI's view of the other hosts: where a store runs, and their UIs through the doors.
type uiCluster struct{ m *Manager }

func (c uiCluster) Owner(ctx context.Context, slug string) (ui.Owner, bool) {
	st, err := c.m.db.FindStore(ctx, slug)
	if err != nil || st.Slug != slug {
		return ui.Owner{}, false // not a store's slug: this host's routes say so
	}
	h, ok := c.m.cluster.Owner(ctx, st.ID)
	if !ok {
		return ui.Owner{}, false
	}
	return ui.Owner{Host: h.Name, Store: st.Name, Alive: h.Alive, Quiet: time.Duration(h.QuietMs) * time.Millisecond}, true
}

func (c uiCluster) DialUI(ctx context.Context, host string) (net.Conn, error) {
	return c.m.cluster.DialUI(ctx, host)
}

// MovesAfter is the host TTL: a host silent that long is dead, and its stores go to the living.
func (c uiCluster) MovesAfter() time.Duration { return cluster.DefaultHostTTL }

// Changed is the state database's: stores, tasks, browsers started and stopped, handoffs, downloads and
// tabs' owners (the mux's ownership hook) are all written there.
func (s uiSource) Changed() <-chan struct{} { return s.m.db.Changed() }

// spec describes the browser of a UI slug: a store's slug, or "web".
func (s uiSource) spec(ctx context.Context, slug string) (browsers.Spec, error) {
	if slug == api.WebSlug {
		return s.m.fleet.WebSpec(ctx)
	}
	st, err := s.m.db.FindStore(ctx, slug)
	if errors.Is(err, errdefs.ErrNotFound) || err == nil && st.Slug != slug {
		return browsers.Spec{}, fmt.Errorf("%w: %q", ui.ErrNoStore, slug)
	}
	if err != nil {
		return browsers.Spec{}, err
	}
	return browsers.StoreSpec(st)
}

func (s uiSource) Browser(ctx context.Context, slug string) (ui.Browser, error) {
	sp, err := s.spec(ctx, slug)
	if err != nil {
		return nil, err
	}
	in := s.m.fleet.Current(sp.Key)
	if in == nil {
		return nil, fmt.Errorf("%s: %w", sp.Name, ui.ErrStopped)
	}
	return muxBrowser{in.Mux().Operator(), in.Mux()}, nil
}

func (s uiSource) StartBrowser(ctx context.Context, slug string) error {
	sp, err := s.spec(ctx, slug)
	if err != nil {
		return err
	}
	return s.m.BrowserAction(ctx, sp, api.ActionStart)
}

func (s uiSource) AnswerHandoff(ctx context.Context, id, status, note string) (api.Handoff, error) {
	return s.m.handoffs.Answer(ctx, id, api.HandoffAnswer{Status: status, Note: note})
}

func (s uiSource) Downloads(ctx context.Context, slug string, limit int) ([]api.Download, error) {
	sp, err := s.spec(ctx, slug)
	if err != nil {
		return nil, err
	}
	ds, err := s.m.db.ListDownloads(ctx, state.DownloadFilter{Key: sp.Key, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]api.Download, 0, len(ds))
	for _, d := range ds {
		out = append(out, downloadView(d, sp.Slug))
	}
	return out, nil
}

func (s uiSource) Timeline(ctx context.Context, taskID string, after int64) (api.Timeline, error) {
	tl, err := s.m.timeline.Task(ctx, taskID, after)
	if errors.Is(err, errdefs.ErrNotFound) {
		err = fmt.Errorf("task %q: %w", taskID, ui.ErrNoTask)
	}
	return tl, err
}

func (s uiSource) CallSteps(ctx context.Context, taskID string, seq int64) ([]api.Entry, error) {
	return s.m.timeline.CallSteps(ctx, taskID, seq)
}

func (s uiSource) Shot(ctx context.Context, taskID string, seq int64) ([]byte, error) {
	b, err := s.m.timeline.Shot(ctx, taskID, seq)
	if errors.Is(err, timeline.ErrNoShot) {
		err = fmt.Errorf("%w: %w", ui.ErrNoShot, err)
	}
	return b, err
}

func (s uiSource) DownloadFile(ctx context.Context, id int64) (*os.File, api.Download, error) {
	ds, err := s.m.db.ListDownloads(ctx, state.DownloadFilter{ID: id})
	if err != nil {
		return nil, api.Download{}, err
	}
	if len(ds) == 0 {
		return nil, api.Download{}, fmt.Errorf("download %d: %w", id, ui.ErrNoDownload)
	}
	slugs, err := s.m.downloads.slugsByKey(ctx)
	if err != nil {
		return nil, api.Download{}, err
	}
	d := downloadView(ds[0], slugs[ds[0].Key])
	// The folder is the agent user's (SPEC §14): what it holds now is opened only if it is a file, never
	// through a link the agent put there.
	f, err := os.OpenFile(d.Path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, d, fmt.Errorf("download %d (%s): its file is gone: %w", id, d.Path, ui.ErrNoDownload)
	}
	if err != nil {
		return nil, d, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, d, fmt.Errorf("download %d (%s) is no longer a plain file: %w", id, d.Path, ui.ErrNoDownload)
	}
	return f, d, nil
}

// muxBrowser is a running browser's mux as the UI sees it: the mux's operator API, with its View as
// the UI's interface.
type muxBrowser struct {
	*mux.Operator
	mx *mux.Mux
}

func (b muxBrowser) View(ctx context.Context, targetID string, opt mux.ViewOptions) (ui.View, error) {
	v, err := b.Operator.View(ctx, targetID, opt)
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (b muxBrowser) Viewers() int { return b.mx.Stats().Viewers }

var _ ui.Source = uiSource{}

// listenUI binds the web UI's address during start-up, so that a taken port stops the start instead of
// leaving a manager without its UI. It returns nil with the UI off.
func listenUI(cfg *config.Config) (net.Listener, error) {
	if cfg.UIAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.UIAddr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("VIBE_UI_ADDR=%s: the port is in use (another manager's UI, or another program): "+
			"stop it, or set VIBE_UI_ADDR to a free host:port, or to off", cfg.UIAddr)
	}
	if err != nil {
		return nil, fmt.Errorf("VIBE_UI_ADDR=%s: %w", cfg.UIAddr, err)
	}
	return ln, nil
}

// newUI builds the web UI on its bound listener.
func (m *Manager) newUI(ln net.Listener) *ui.Server {
	host, _, _ := net.SplitHostPort(m.cfg.UIAddr)
	return ui.New(ui.Config{Host: host, Port: ln.Addr().(*net.TCPAddr).Port, Source: uiSource{m},
		AllowUser: tasks.NewUIUsers(m.cfg, m.db, m.fleet).Allow, Log: m.root.With().Str("component", "ui").Logger()})
}
