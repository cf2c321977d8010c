package manager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"vibebrowser/manager/api"
	"vibebrowser/state"
)

// newID returns a random UUID-shaped store id.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// createStore validates spec, registers the store with its slug, token and port, and writes its wrapper.
func (m *Manager) createStore(ctx context.Context, spec api.StoreSpec) (state.Store, error) {
	if err := state.ValidateName(spec.Name); err != nil {
		return state.Store{}, err
	}
	if spec.Backend == "" {
		spec.Backend = string(state.BackendChrome)
	}
	backend, err := state.ParseBackend(spec.Backend)
	if err != nil {
		return state.Store{}, err
	}
	opts := storeOptions{CDPURL: spec.CDPURL, Headless: spec.Headless}
	store := state.Store{Name: spec.Name, Backend: backend}
	if spec.Ziniao != nil && backend != state.BackendZiniao {
		return state.Store{}, fmt.Errorf("%w: ziniao settings are only for the ziniao backend", ErrBadRequest)
	}
	switch backend {
	case state.BackendZiniao:
		z := spec.Ziniao
		if z == nil || z.Browser == "" || z.Company == "" || z.Username == "" || z.Password == "" {
			return state.Store{}, fmt.Errorf("%w: a ziniao store needs --ziniao-browser (browserOauth or browserId), "+
				"--ziniao-company, --ziniao-username and --ziniao-password (or VIBE_ZINIAO_PASSWORD)", ErrBadRequest)
		}
		if z.Port < 0 || z.Port > 65535 {
			return state.Store{}, fmt.Errorf("%w: --ziniao-port %d: want 1-65535 (default 16851)", ErrBadRequest, z.Port)
		}
		store.Ziniao = state.ZiniaoAccount{Company: z.Company, Username: z.Username, Password: z.Password}
		store.ZiniaoBrowser, opts.ZiniaoPort = z.Browser, z.Port
	case state.BackendCDP:
		if spec.CDPURL == "" {
			return state.Store{}, fmt.Errorf("%w: a cdp store needs --cdp-url (http://host:port or ws://host:port/devtools/browser/<id>)", ErrBadRequest)
		}
		if err := validCDPURL(spec.CDPURL); err != nil {
			return state.Store{}, err
		}
	default:
		if spec.CDPURL != "" {
			return state.Store{}, fmt.Errorf("%w: --cdp-url is only for the cdp backend", ErrBadRequest)
		}
	}
	config, err := json.Marshal(opts)
	if err != nil {
		return state.Store{}, err
	}
	store.ID = newID()
	store.Slug, store.Config, store.Token = state.Slug(spec.Name, store.ID), config, state.NewToken()
	s, err := m.db.CreateStore(ctx, store)
	if err != nil {
		return state.Store{}, err
	}
	if _, err := m.db.AllocatePort(ctx, s.ID, m.cfg.ProxyPortBase, portFree); err != nil {
		_ = m.db.DeleteStore(ctx, s.ID)
		return state.Store{}, err
	}
	if s, err = m.db.GetStore(ctx, s.ID); err != nil {
		return state.Store{}, err
	}
	if t, err := m.storeTarget(s); err == nil {
		if err := m.writeWrapperFor(ctx, t); err != nil {
			m.log.Warn().Err(err).Str("store", s.ID).Msg("wrapper not written")
		}
	}
	m.log.Info().Str("store", s.ID).Str("name", s.Name).Str("slug", s.Slug).Int("port", s.ProxyPort).Msg("store added")
	return s, nil
}

// storeView is a store as the API prints it.
func (m *Manager) storeView(s state.Store) api.Store {
	v := api.Store{ID: s.ID, Name: s.Name, Slug: s.Slug, Backend: string(s.Backend), ProxyPort: s.ProxyPort,
		Browser: api.BrowserState{Status: api.StatusStopped}}
	if s.ProxyPort > 0 {
		hostPort := "127.0.0.1:" + strconv.Itoa(s.ProxyPort)
		v.CDPHTTP = "http://" + hostPort + "/" + s.Token
		v.CDPWS = "ws://" + hostPort + "/" + s.Token
	}
	var opts storeOptions
	if json.Unmarshal(s.Config, &opts) == nil {
		v.CDPURL, v.Headless = opts.CDPURL, opts.Headless
	}
	if l := m.browserSlot(s.ID).current(); l != nil {
		v.Browser = api.BrowserState{Status: api.StatusRunning, PID: l.run.PID()}
	}
	if s.Backend == state.BackendZiniao {
		v.ZiniaoBrowser, v.ZiniaoAccount = s.ZiniaoBrowser, s.Ziniao.Company+"/"+s.Ziniao.Username
	}
	if dir := m.cfg.path("bin", s.Slug); fileExists(dir) {
		v.Wrapper = dir
	}
	return v
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (m *Manager) handleListStores(r *http.Request) (any, error) {
	stores, err := m.db.ListStores(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]api.Store, 0, len(stores))
	for _, s := range stores {
		out = append(out, m.storeView(s))
	}
	return out, nil
}

func (m *Manager) handleCreateStore(r *http.Request) (any, error) {
	var spec api.StoreSpec
	if err := decode(r, &spec); err != nil {
		return nil, err
	}
	s, err := m.createStore(r.Context(), spec)
	if err != nil {
		return nil, err
	}
	return m.storeView(s), nil
}

// findStore resolves a store named by name, slug or id.
func (m *Manager) findStore(ctx context.Context, ref string) (state.Store, error) {
	s, err := m.db.FindStore(ctx, ref)
	if errors.Is(err, state.ErrNotFound) {
		return s, fmt.Errorf("no store named %q (by name, slug or id; see vibe-browser store list): %w", ref, state.ErrNotFound)
	}
	return s, err
}

func (m *Manager) handleGetStore(r *http.Request) (any, error) {
	s, err := m.findStore(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	return m.storeView(s), nil
}

func (m *Manager) handleUpdateStore(r *http.Request) (any, error) {
	var u api.StoreUpdate
	if err := decode(r, &u); err != nil {
		return nil, err
	}
	s, err := m.findStore(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	s, err = m.db.UpdateStore(r.Context(), s.ID, func(s *state.Store) error {
		var opts storeOptions
		if err := json.Unmarshal(s.Config, &opts); err != nil {
			return err
		}
		if u.Name != nil {
			if err := state.ValidateName(*u.Name); err != nil {
				return err
			}
			s.Name = *u.Name // the slug stays: it names the profile, the wrapper and the daemons
		}
		if u.CDPURL != nil {
			if s.Backend != state.BackendCDP {
				return fmt.Errorf("%w: cdp_url is only for the cdp backend", ErrBadRequest)
			}
			if err := validCDPURL(*u.CDPURL); err != nil {
				return err
			}
			opts.CDPURL = *u.CDPURL
		}
		if u.Headless != nil {
			opts.Headless = u.Headless
		}
		config, err := json.Marshal(opts)
		s.Config = config
		return err
	})
	if err != nil {
		return nil, err
	}
	return m.storeView(s), nil
}

func (m *Manager) handleDeleteStore(r *http.Request) (any, error) {
	ctx := r.Context()
	s, err := m.findStore(ctx, r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	if err := m.stop(ctx, s.ID); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(m.cfg.path("bin", s.Slug)); err != nil {
		return nil, err
	}
	if err := m.db.DeleteStore(ctx, s.ID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	delete(m.browsers, s.ID)
	m.mu.Unlock()
	m.log.Info().Str("store", s.ID).Str("name", s.Name).Msg("store removed")
	return struct{}{}, nil
}

func (m *Manager) handleStoreBrowser(r *http.Request) (any, error) {
	ctx := r.Context()
	s, err := m.findStore(ctx, r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	t, err := m.storeTarget(s)
	if err != nil {
		return nil, err
	}
	if err := m.browserAction(ctx, t, r.PathValue("action")); err != nil {
		return nil, err
	}
	return m.storeView(s), nil
}

func (m *Manager) handleWebBrowser(r *http.Request) (any, error) {
	ctx := r.Context()
	t, err := m.webTarget(ctx)
	if err != nil {
		return nil, err
	}
	if err := m.browserAction(ctx, t, r.PathValue("action")); err != nil {
		return nil, err
	}
	return m.browserView(t.key, t.slug), nil
}

// browserAction starts, stops or ensures t's browser. An explicit start is a human's decision: it clears
// the relaunch budget first.
func (m *Manager) browserAction(ctx context.Context, t target, action string) error {
	switch strings.ToLower(action) {
	case api.ActionStart:
		if err := m.db.ClearRelaunches(ctx, t.key); err != nil {
			return err
		}
		b := m.browserSlot(t.key)
		if err := b.acquire(ctx); err != nil {
			return err
		}
		b.lastStartFailed = false
		b.release()
		_, err := m.ensure(ctx, t)
		return err
	case api.ActionEnsure:
		_, err := m.ensure(ctx, t)
		return err
	case api.ActionStop:
		return m.stop(ctx, t.key)
	}
	return fmt.Errorf("%w: browser action %q: want start, stop or ensure", ErrBadRequest, action)
}
