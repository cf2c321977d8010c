package manager

import (
	"context"
	"os"
	"sort"
	"strconv"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/handoffs"
	"vibebrowser/manager/keeper"
	"vibebrowser/manager/netid"
	"vibebrowser/manager/tasks"
	"vibebrowser/mux"
	"vibebrowser/state"
)

// StoreView is a store as the API prints it.
func (m *Manager) StoreView(s state.Store) api.Store {
	v := api.Store{ID: s.ID, Name: s.Name, Slug: s.Slug, Backend: string(s.Backend), ProxyPort: s.ProxyPort,
		Browser: api.BrowserState{Status: api.StatusStopped}}
	if s.ProxyPort > 0 {
		v.CDPHTTP, v.CDPWS = endpointURLs(s.ProxyPort, s.Token)
	}
	if opts, err := browsers.DecodeOptions(s); err == nil {
		v.CDPURL, v.Headless = opts.CDPURL, opts.Headless
		v.Timezone, v.Lang = opts.Timezone, opts.Lang
		if opts.Proxy != "" {
			if p, err := netid.ParseProxy(opts.Proxy); err == nil {
				v.Proxy, v.ExitIP = p.Redacted(), m.exitIPs.Of(s.ID, p)
			} else {
				v.Proxy = netid.RedactURL(opts.Proxy) // a stored URL that no longer reads, shown without its password
			}
		}
	}
	v.AgentUser, v.BrowserUser, _ = m.cfg.StoreUsers(s)
	if m.cluster != nil {
		v.Host = m.cluster.Where(s.ID)
	}
	if sp, err := browsers.StoreSpec(s); err == nil {
		v.Timeline, v.TimelineFrom = m.timeline.Mode(sp)
	}
	if in := m.fleet.Current(s.ID); in != nil {
		v.Browser = api.BrowserState{Status: api.StatusRunning, PID: in.PID()}
		if v.Proxy != "" {
			if st, err := keeper.ReadForwardStatus(keeper.ForwardStatusPath(in.KeeperDir(), s.ID)); err == nil && st.Error != "" {
				v.ProxyError = st.Error + " (since " + st.Since.Format(time.RFC3339) + ")"
			}
		}
	}
	if s.Backend == state.BackendZiniao {
		v.ZiniaoBrowser, v.ZiniaoAccount = s.ZiniaoBrowser, s.Ziniao.Company+"/"+s.Ziniao.Username
	}
	if dir := m.cfg.Path("bin", s.Slug); fileExists(dir) {
		v.Wrapper = dir
	}
	v.CheckpointAt, v.SnapshotAt = m.fleet.Snapshots().LoginTimes(s.Slug)
	return v
}

// endpointURLs are the cdp_http and cdp_ws a browser's endpoint prints: its port and secret token.
func endpointURLs(port int, token string) (cdpHTTP, cdpWS string) {
	hostPort := "127.0.0.1:" + strconv.Itoa(port)
	return "http://" + hostPort + "/" + token, "ws://" + hostPort + "/" + token
}

// WebView describes the web browser with its endpoints.
func (m *Manager) WebView(ctx context.Context, sp browsers.Spec) (api.WebBrowser, error) {
	b, err := m.browserView(ctx, sp.Key, sp.Slug)
	if err != nil {
		return api.WebBrowser{}, err
	}
	v := api.WebBrowser{Browser: b}
	if b.ProxyPort > 0 { // browserView's port: the endpoint's, bound whether the browser runs or not
		v.CDPHTTP, v.CDPWS = endpointURLs(b.ProxyPort, sp.Token)
	}
	return v, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// browserView describes key's browser for the status.
func (m *Manager) browserView(ctx context.Context, key, slug string) (api.Browser, error) {
	v := api.Browser{Key: key, Slug: slug, Status: api.StatusStopped, RelaunchMax: m.cfg.RelaunchMax}
	if m.cfg.RelaunchMax > 0 {
		n, err := m.db.Browsers().CountRelaunches(ctx, key, time.Now().Add(-m.cfg.RelaunchWindow))
		if err != nil {
			return v, err
		}
		v.RelaunchesLeft = max(m.cfg.RelaunchMax-n, 0)
	}
	v.ProxyPort = m.fleet.Port(key) // bound while the store exists, its browser running or not
	if in := m.fleet.Current(key); in != nil {
		st := in.Mux().Stats()
		v.Status, v.PID, v.ProxyPort, v.Clients, v.IdleS = api.StatusRunning, in.PID(), in.Port(), st.Clients, int(st.IdleSeconds)
		v.StartedAt, v.Held, v.KeeperPID = in.StartedAt(), st.Held, in.KeeperPID()
		for _, c := range st.PerClient {
			v.Tabs += c.Tabs
		}
	}
	return v, nil
}

// clientURL is a mux client's WebSocket endpoint as ensure hands it to an agent: its capability URL (SPEC
// §14), which names that client and no other and does not carry the store token.
func clientURL(port int, token, clientID string) string {
	return "ws://127.0.0.1:" + strconv.Itoa(port) + mux.CapabilityPath(token, clientID)
}

// Status is the daemon's whole picture: GET /v1/status and the web UI's overview.
func (m *Manager) Status(ctx context.Context) (api.Status, error) {
	stores, err := m.db.ListStores(ctx)
	if err != nil {
		return api.Status{}, err
	}
	all, err := m.db.ListTasks(ctx)
	if err != nil {
		return api.Status{}, err
	}
	st := api.Status{Version: m.version, PID: os.Getpid(), Home: m.cfg.Home, BrowserUse: m.cfg.BrowserUse,
		BrowserUseErr: m.cfg.BrowserUseProblem, BrowserUseFrom: m.cfg.BrowserUseFrom,
		Stores: []api.Store{}, Browsers: []api.Browser{}, Tasks: []api.Task{}}
	sort.Slice(stores, func(i, j int) bool { return stores[i].Slug < stores[j].Slug })
	slugs := handoffs.SlugsOf(stores)
	for _, s := range stores {
		st.Stores = append(st.Stores, m.StoreView(s))
		b, err := m.browserView(ctx, s.ID, s.Slug)
		if err != nil {
			return api.Status{}, err
		}
		st.Browsers = append(st.Browsers, b)
	}
	web, err := m.browserView(ctx, api.WebKey, api.WebKey)
	if err != nil {
		return api.Status{}, err
	}
	st.Browsers = append(st.Browsers, web)
	for _, t := range all {
		v := tasks.View(t)
		v.StoreSlug = slugs[t.StoreID] // "" for the web browser, and for a store removed since
		st.Tasks = append(st.Tasks, v)
	}
	pending, err := m.db.ListHandoffs(ctx, state.HandoffPending)
	if err != nil {
		return api.Status{}, err
	}
	st.Handoffs = m.handoffs.Views(stores, pending)
	if m.cluster != nil {
		self := m.cluster.Name()
		var remote map[string]api.Browser
		st.Host = self
		st.Hosts, remote = m.cluster.Pane(ctx)
		for i := range st.Stores {
			host := st.Stores[i].Host
			b := &st.Browsers[i] // the store's browser: Browsers lists them in the stores' order
			switch rb, ok := remote[b.Key]; {
			case b.Status == api.StatusRunning:
				b.Host = self
			case ok && rb.Host == host:
				// SPEC §19 "One pane": the browser as its host runs it, reached here through this host's endpoint.
				rb.Slug, rb.ProxyPort = b.Slug, b.ProxyPort
				*b = rb
			default:
				b.Host = host // not running (yet), or its host did not answer: Hosts says which
			}
		}
		st.Browsers[len(st.Browsers)-1].Host = self // the web browser is each host's own
	}
	return st, nil
}

// running are the browsers of the stores this host runs, as its status shows them: other hosts' status and
// web UI ask for them (SPEC §19 "One pane").
func (h hostStores) running(ctx context.Context) ([]api.Browser, error) {
	out := []api.Browser{}
	for _, in := range h.m.fleet.Running() {
		sp := in.Spec()
		if sp.Key == api.WebKey {
			continue
		}
		b, err := h.m.browserView(ctx, sp.Key, sp.Slug)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
