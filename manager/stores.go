package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/cluster"
	"vibebrowser/manager/clusterhost"
	"vibebrowser/manager/netid"
	"vibebrowser/manager/remote"
	"vibebrowser/manager/tasks"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// CreateStore validates browsers.Spec, registers the store (state gives it its id, slug and token), binds its
// endpoint (its port, for the store's life) and writes its wrapper.
func (m *Manager) CreateStore(ctx context.Context, in api.StoreSpec) (state.Store, error) {
	if err := state.ValidateName(in.Name); err != nil {
		return state.Store{}, err
	}
	if in.Host != "" && m.cluster == nil {
		return state.Store{}, fmt.Errorf("%w: --host %s places a store on a host of a cluster, and this manager runs on a "+
			"single host (VIBE_CLUSTER or VIBE_CLUSTER_NODE makes it one of a cluster)", errdefs.ErrInvalid, in.Host)
	}
	if in.Backend == "" {
		in.Backend = string(state.BackendChrome)
	}
	backend, err := state.ParseBackend(in.Backend)
	if err != nil {
		return state.Store{}, err
	}
	opts := browsers.Options{StoreSettings: api.StoreSettings{CDPURL: in.CDPURL, Headless: in.Headless}}
	store := state.Store{Name: in.Name, Backend: backend}
	if in.Ziniao != nil && backend != state.BackendZiniao {
		return state.Store{}, fmt.Errorf("%w: ziniao settings are only for the ziniao backend", errdefs.ErrInvalid)
	}
	switch backend {
	case state.BackendZiniao:
		z := in.Ziniao
		if z == nil || z.Browser == "" || z.Company == "" || z.Username == "" || z.Password == "" {
			return state.Store{}, fmt.Errorf("%w: a ziniao store needs --ziniao-browser (browserOauth or browserId), "+
				"--ziniao-company, --ziniao-username and --ziniao-password (or VIBE_ZINIAO_PASSWORD)", errdefs.ErrInvalid)
		}
		if z.Port < 0 || z.Port > 65535 {
			return state.Store{}, fmt.Errorf("%w: --ziniao-port %d: want 1-65535 (default 16851)", errdefs.ErrInvalid, z.Port)
		}
		store.Ziniao = state.ZiniaoAccount{Company: z.Company, Username: z.Username, Password: z.Password}
		store.ZiniaoBrowser, opts.ZiniaoPort = z.Browser, z.Port
	case state.BackendCDP:
		if in.CDPURL == "" {
			return state.Store{}, fmt.Errorf("%w: a cdp store needs --cdp-url (http://host:port or ws://host:port/devtools/browser/<id>)", errdefs.ErrInvalid)
		}
		if err := remote.ValidateURL(in.CDPURL); err != nil {
			return state.Store{}, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
		}
	default:
		if in.CDPURL != "" {
			return state.Store{}, fmt.Errorf("%w: --cdp-url is only for the cdp backend", errdefs.ErrInvalid)
		}
	}
	if err := setIdentity(backend, &opts, &in.Proxy, &in.Timezone, &in.Lang); err != nil {
		return state.Store{}, err
	}
	if err := tasks.SetUsers(backend, &opts, &in.AgentUser, &in.BrowserUser); err != nil {
		return state.Store{}, err
	}
	if err := setTimeline(&opts, &in.Timeline); err != nil {
		return state.Store{}, err
	}
	if store.Config, err = opts.Encode(); err != nil {
		return state.Store{}, err
	}
	s, err := hostStores{m}.add(ctx, store)
	if err != nil {
		return state.Store{}, err
	}
	if m.cluster != nil {
		if err := m.cluster.Added(ctx, s, in.Host); err != nil {
			if rerr := (hostStores{m}).remove(ctx, s); rerr != nil {
				m.log.Error().Err(rerr).Str("store", s.ID).Msg("a store the cluster refused is not removed here")
			}
			return state.Store{}, err
		}
	}
	m.log.Info().Str("store", s.ID).Str("name", s.Name).Str("slug", s.Slug).Int("port", s.ProxyPort).Msg("store added")
	return s, nil
}

// hostStores are this host's copies of the stores: each one's state, endpoint and wrapper. Through it the
// manager's API and the cluster's stores bucket add and remove them the same way.
type hostStores struct{ m *Manager }

// add writes store to state (it keeps a given id, slug and token), binds its endpoint and writes its
// wrapper: a store added here, or taken in from the cluster.
func (h hostStores) add(ctx context.Context, store state.Store) (state.Store, error) {
	m := h.m
	s, err := m.db.CreateStore(ctx, store)
	if err != nil {
		return state.Store{}, err
	}
	sp, err := browsers.StoreSpec(s)
	if err == nil {
		err = m.fleet.Bind(ctx, sp)
	}
	if err != nil {
		_ = m.db.DeleteStore(ctx, s.ID)
		m.fleet.Forget(s.ID)
		return state.Store{}, err
	}
	if s, err = m.db.GetStore(ctx, s.ID); err != nil {
		return state.Store{}, err
	}
	if err := m.home.LayOut(ctx); err != nil {
		m.log.Error().Err(err).Str("store", s.ID).Msg("the store's folders could not be given to its users")
	}
	if err := m.wrappers.Write(ctx, sp); err != nil {
		m.log.Warn().Err(err).Str("store", s.ID).Msg("wrapper not written")
	}
	return s, nil
}

// UpdateStore applies u to the store named by ref. The slug stays: it names the profile, the wrapper and
// the daemons.
func (m *Manager) UpdateStore(ctx context.Context, ref string, u api.StoreUpdate) (state.Store, error) {
	s, err := m.FindStore(ctx, ref)
	if err != nil {
		return state.Store{}, err
	}
	s, err = m.db.UpdateStore(ctx, s.ID, func(s *state.Store) error {
		opts, err := browsers.DecodeOptions(*s)
		if err != nil {
			return err
		}
		if u.Name != nil {
			if err := state.ValidateName(*u.Name); err != nil {
				return err
			}
			s.Name = *u.Name
		}
		if u.CDPURL != nil {
			if s.Backend != state.BackendCDP {
				return fmt.Errorf("%w: cdp_url is only for the cdp backend", errdefs.ErrInvalid)
			}
			if err := remote.ValidateURL(*u.CDPURL); err != nil {
				return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
			}
			opts.CDPURL = *u.CDPURL
		}
		if u.Headless != nil {
			opts.Headless = u.Headless
		}
		if err := setIdentity(s.Backend, &opts, u.Proxy, u.Timezone, u.Lang); err != nil {
			return err
		}
		if err := tasks.SetUsers(s.Backend, &opts, u.AgentUser, u.BrowserUser); err != nil {
			return err
		}
		if err := setTimeline(&opts, u.Timeline); err != nil {
			return err
		}
		s.Config, err = opts.Encode()
		return err
	})
	if err != nil {
		return state.Store{}, err
	}
	if u.AgentUser != nil || u.BrowserUser != nil {
		m.usersChanged(ctx, s)
	}
	if m.cluster != nil {
		if err := m.cluster.Publish(ctx, s); err != nil {
			return state.Store{}, fmt.Errorf("%w: store %s changed on this host, not in the cluster: %v", errdefs.ErrUnavailable, s.Name, err)
		}
	}
	return s, nil
}

// usersChanged lays out the store's folders for its new users and rewrites its wrapper (its runtime folder
// is its agent user's own when it has one).
func (m *Manager) usersChanged(ctx context.Context, s state.Store) {
	if err := m.home.LayOut(ctx); err != nil {
		m.log.Error().Err(err).Str("store", s.ID).Msg("the store's folders could not be given to its users")
	}
	if sp, err := browsers.StoreSpec(s); err == nil {
		if err := m.wrappers.Write(ctx, sp); err != nil {
			m.log.Warn().Err(err).Str("store", s.ID).Msg("wrapper not written")
		}
	}
}

// setIdentity checks and sets the store's network identity (SPEC §16): each of proxy, zone and lang that is
// not nil replaces the store's ("" or api.NoIdentity clears it). Only a chrome store takes one: a Ziniao
// environment brings its own proxy, and a cdp browser is someone else's.
func setIdentity(backend state.Backend, opts *browsers.Options, proxy, zone, lang *string) error {
	set := func(v *string) bool { return v != nil && *v != "" && *v != api.NoIdentity }
	if backend != state.BackendChrome && (set(proxy) || set(zone) || set(lang)) {
		return fmt.Errorf("%w: --proxy, --timezone and --lang are for chrome stores: a ziniao environment "+
			"brings its own proxy and fingerprint, and a cdp browser is launched by someone else", errdefs.ErrInvalid)
	}
	if proxy != nil {
		opts.Proxy = ""
		if set(proxy) {
			p, err := netid.ParseProxy(*proxy)
			if err != nil {
				return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
			}
			opts.Proxy = p.String()
		}
	}
	if zone != nil {
		opts.Timezone = ""
		if set(zone) {
			if err := netid.CheckTimezone(*zone); err != nil {
				return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
			}
			opts.Timezone = *zone
		}
	}
	if lang != nil {
		opts.Lang = ""
		if set(lang) {
			tag, err := netid.CheckLang(*lang)
			if err != nil {
				return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
			}
			opts.Lang = tag
		}
	}
	return nil
}

// setTimeline checks and sets the store's timeline mode (SPEC §15) when mode is not nil; "" follows
// VIBE_TIMELINE.
func setTimeline(opts *browsers.Options, mode *string) error {
	if mode == nil {
		return nil
	}
	switch *mode {
	case "", api.TimelineFull, api.TimelineMeta, api.TimelineOff:
		opts.Timeline = *mode
		return nil
	}
	return fmt.Errorf("%w: --timeline %q: want full (code, output and screenshots), meta (the steps only), off, "+
		"or \"\" for VIBE_TIMELINE's", errdefs.ErrInvalid, *mode)
}

// DeleteStore stops the store's browser and removes the store, its wrapper, its endpoint and its port.
func (m *Manager) DeleteStore(ctx context.Context, ref string) error {
	s, err := m.FindStore(ctx, ref)
	if err != nil {
		return err
	}
	if err := (hostStores{m}).remove(ctx, s); err != nil {
		return err
	}
	if m.cluster != nil {
		m.cluster.Forget(ctx, s.ID, m.logins)
		if err := m.cluster.Stores().Delete(ctx, s.ID); err != nil {
			return fmt.Errorf("%w: store %s removed from this host, not from the cluster: %v", errdefs.ErrUnavailable, s.Name, err)
		}
	}
	m.log.Info().Str("store", s.ID).Str("name", s.Name).Msg("store removed")
	return nil
}

// remove stops s's browser and removes s from this host: its wrapper, its endpoint, its port and its state.
func (h hostStores) remove(ctx context.Context, s state.Store) error {
	m := h.m
	return m.fleet.Remove(ctx, s.ID, func(ctx context.Context) error {
		if err := os.RemoveAll(m.cfg.Path("bin", s.Slug)); err != nil {
			return err
		}
		return m.db.DeleteStore(ctx, s.ID)
	})
}

// FindStore resolves a store named by name, slug or id.
func (m *Manager) FindStore(ctx context.Context, ref string) (state.Store, error) {
	s, err := m.db.FindStore(ctx, ref)
	if errors.Is(err, errdefs.ErrNotFound) {
		return s, fmt.Errorf("no store named %q (by name, slug or id; see vibe-browser store list): %w", ref, errdefs.ErrNotFound)
	}
	return s, err
}

// BrowserAction starts, stops or ensures sp's browser. An explicit start is a person's decision: it
// forgives the relaunch budget first.
func (m *Manager) BrowserAction(ctx context.Context, sp browsers.Spec, action string) error {
	switch strings.ToLower(action) {
	case api.ActionStart:
		_, err := m.fleet.Start(ctx, sp)
		return err
	case api.ActionEnsure:
		_, err := m.fleet.Ensure(ctx, sp)
		return err
	case api.ActionStop:
		return m.fleet.Stop(ctx, sp.Key)
	}
	return fmt.Errorf("%w: browser action %q: want start, stop or ensure", errdefs.ErrInvalid, action)
}

// Ensure is the shim's call, for a caller the API admitted: the browser made ready, the task's lease
// renewed, the client's endpoint returned.
func (m *Manager) Ensure(ctx context.Context, req api.EnsureRequest) (api.EnsureResponse, error) {
	began := time.Now()
	defer func() { m.metrics.EnsureSeconds.Observe(time.Since(began).Seconds()) }()
	if err := tasks.CheckCaller(req.ClientID, req.BUName, req.TaskID); err != nil {
		return api.EnsureResponse{}, err
	}
	if req.Via != "" && req.Via != api.ViaMCP && req.Via != api.ViaCDP {
		return api.EnsureResponse{}, fmt.Errorf("%w: via %q: want %q, %q or none", errdefs.ErrInvalid, req.Via, api.ViaMCP, api.ViaCDP)
	}
	if m.cfg.BrowserUse == "" && req.Via == "" {
		return api.EnsureResponse{}, fmt.Errorf("%w: %s", errdefs.ErrUnavailable, m.cfg.BrowserUseProblem)
	}
	var sp browsers.Spec
	switch req.Kind {
	case api.KindStore:
		s, err := m.shimStore(ctx, req.StoreID)
		if err != nil {
			return api.EnsureResponse{}, err
		}
		if sp, err = browsers.StoreSpec(s); err != nil {
			return api.EnsureResponse{}, err
		}
	case api.KindWeb:
		var err error
		if sp, err = m.fleet.WebSpec(ctx); err != nil {
			return api.EnsureResponse{}, err
		}
	default:
		return api.EnsureResponse{}, fmt.Errorf("%w: kind %q: want store or web", errdefs.ErrInvalid, req.Kind)
	}
	if req.TaskID != "" {
		storeID := ""
		if req.Kind == api.KindStore {
			storeID = sp.Key
		}
		if err := m.tasks.Touch(ctx, req.TaskID, storeID); err != nil {
			return api.EnsureResponse{}, err
		}
	}
	if m.cluster != nil && req.Kind == api.KindStore {
		if err := m.cluster.AwaitMove(ctx, sp.Key); err != nil { // a store moving away: its ensure goes where it went
			return api.EnsureResponse{}, err
		}
		if host, elsewhere := m.cluster.Elsewhere(sp.Key); elsewhere {
			// SPEC §19: the store's host makes its browser ready; the client connects to the store's endpoint
			// here, which relays it there.
			if _, err := m.cluster.AskEnsure(ctx, host, api.EnsureRequest{Kind: req.Kind, StoreID: sp.Key,
				ClientID: req.ClientID, BUName: req.BUName, Via: req.Via}); err != nil {
				return api.EnsureResponse{}, err
			}
			return m.ensureAnswer(sp, req), nil
		}
	}
	if _, err := m.fleet.Ensure(ctx, sp); err != nil {
		return api.EnsureResponse{}, err
	}
	return m.ensureAnswer(sp, req), nil
}

// ensureAnswer is ensure's answer for req's client of sp's browser: its capability URL on the store's
// endpoint here, its download folder here, its task's lease and timeline mode.
func (m *Manager) ensureAnswer(sp browsers.Spec, req api.EnsureRequest) api.EnsureResponse {
	resp := api.EnsureResponse{CDPWS: clientURL(m.fleet.Port(sp.Key), sp.Token, req.ClientID), DownloadDir: m.downloads.dir(sp, req.ClientID)}
	if req.TaskID != "" {
		resp.LeaseS = int(m.cfg.TaskLease / time.Second)
		resp.Timeline, _ = m.timeline.Mode(sp)
	}
	return resp
}

// shimStore is the store a shim's baked config names; one that is gone means the wrapper is stale.
func (m *Manager) shimStore(ctx context.Context, id string) (state.Store, error) {
	s, err := m.db.GetStore(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		err = fmt.Errorf("store %s no longer exists; this wrapper is stale (restart the manager to clean it up): %w",
			id, errdefs.ErrNotFound)
	}
	return s, err
}

// publishLocal gives the cluster this host's stores it lacks, at this home's first start in cluster mode
// (clusterhost.Host.PublishLocal); a store whose name or slug is another's of the cluster is an event.
func (h hostStores) publishLocal(ctx context.Context) error {
	m := h.m
	local, err := m.db.ListStores(ctx)
	if err != nil {
		return err
	}
	return m.cluster.PublishLocal(ctx, m.cfg.Home, local, func(s state.Store, err error) {
		m.note(zerolog.ErrorLevel, api.EventStoreClash, s.ID, api.Event{Message: err.Error() +
			": this host's store is not given to the cluster (rename one, then restart this manager)"})
	})
}

// follow brings this host's stores in line with the cluster's until ctx ends.
func (h hostStores) follow(ctx context.Context) {
	h.m.cluster.Stores().Follow(ctx, func(r cluster.StoreRecord) { h.apply(ctx, r) })
}

// apply brings this host's copy of store r.ID in line with r: created (with its id, slug and token; a
// port, an endpoint and a wrapper of its own here), updated, or removed. Nothing it does is written back to
// the cluster.
func (h hostStores) apply(ctx context.Context, r cluster.StoreRecord) {
	m := h.m
	log := m.log.With().Str("store", r.ID).Str("from", "cluster").Logger()
	cur, err := m.db.GetStore(ctx, r.ID)
	found := err == nil
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		log.Error().Err(err).Msg("a store of the cluster is not taken in")
		return
	}
	switch {
	case r.Deleted && !found:
	case r.Deleted:
		if err := h.remove(ctx, cur); err != nil {
			log.Error().Err(err).Msg("a store removed from the cluster is not removed here")
			return
		}
		log.Info().Str("name", cur.Name).Msg("store removed (removed on another host)")
	case !found:
		var s state.Store
		clusterhost.SetFromRecord(&s, r)
		s, err := h.add(ctx, s)
		if err != nil {
			h.refused(r, err)
			return
		}
		log.Info().Str("name", s.Name).Str("slug", s.Slug).Int("port", s.ProxyPort).Msg("store added (added on another host)")
	case clusterhost.SameRecord(clusterhost.StoreRecord(cur, ""), r):
	default:
		s, err := m.db.UpdateStore(ctx, r.ID, func(s *state.Store) error {
			clusterhost.SetFromRecord(s, r)
			return nil
		})
		if err != nil {
			h.refused(r, err)
			return
		}
		m.usersChanged(ctx, s)
		log.Info().Str("name", s.Name).Msg("store changed (changed on another host)")
	}
}

// refused tells why store r of the cluster was not taken in here: a clash of names or slugs is an event
// naming both stores, anything else a log line.
func (h hostStores) refused(r cluster.StoreRecord, err error) {
	m := h.m
	var conflict *state.ConflictError
	if errors.As(err, &conflict) && conflict.Owner != "" {
		by := ""
		if r.By != "" {
			by = " (added on host " + r.By + ")"
		}
		m.note(zerolog.ErrorLevel, api.EventStoreClash, r.ID, api.Event{Message: fmt.Sprintf(
			"the cluster's store %q (slug %s, id %s)%s is not taken in on this host: its %s %q is this host's store %q (id %s); "+
				"rename one of them", r.Name, r.Slug, r.ID, by, conflict.What, conflict.Value, conflict.OwnerName, conflict.Owner)})
		return
	}
	m.log.Error().Err(err).Str("store", r.ID).Msg("a store of the cluster is not taken in")
}
