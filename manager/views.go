package manager

import (
	"os"
	"strconv"

	"vibebrowser/manager/api"
	"vibebrowser/state"
)

// storeView is a store as the API prints it.
func (m *Manager) storeView(s state.Store) api.Store {
	v := api.Store{ID: s.ID, Name: s.Name, Slug: s.Slug, Backend: string(s.Backend), ProxyPort: s.ProxyPort,
		Browser: api.BrowserState{Status: api.StatusStopped}}
	if s.ProxyPort > 0 {
		hostPort := "127.0.0.1:" + strconv.Itoa(s.ProxyPort)
		v.CDPHTTP = "http://" + hostPort + "/" + s.Token
		v.CDPWS = "ws://" + hostPort + "/" + s.Token
	}
	if opts, err := decodeStoreOptions(s); err == nil {
		v.CDPURL, v.Headless = opts.CDPURL, opts.Headless
	}
	if in := m.slot(s.ID).current(); in != nil {
		v.Browser = api.BrowserState{Status: api.StatusRunning, PID: in.browser.PID()}
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

// browserView describes key's browser for the status.
func (m *Manager) browserView(key, slug string) api.Browser {
	v := api.Browser{Key: key, Slug: slug, Status: api.StatusStopped}
	if in := m.slot(key).current(); in != nil {
		st := in.mux.Stats()
		v.Status, v.PID, v.ProxyPort, v.Clients, v.IdleS = api.StatusRunning, in.browser.PID(), in.port, st.Clients, int(st.IdleSeconds)
		for _, c := range st.PerClient {
			v.Tabs += c.Tabs
		}
	}
	return v
}

func taskView(t state.Task) api.Task {
	return api.Task{ID: t.ID, Store: t.StoreID, Status: string(t.Status), LeaseUntil: t.LeaseUntil}
}

// clientURL is a mux client's WebSocket endpoint.
func clientURL(port int, token, clientID string) string {
	return "ws://127.0.0.1:" + strconv.Itoa(port) + "/" + token + "/client-" + clientID
}
