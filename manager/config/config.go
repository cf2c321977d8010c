// Package config is the daemon's configuration: every VIBE_* knob, read from the environment and checked before anything starts.
package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/chrome"
	"vibebrowser/manager/seal"
	"vibebrowser/manager/ziniao"
	"vibebrowser/mux"
	"vibebrowser/state"
)

// Config is the daemon's configuration: every VIBE_* knob of SPEC §4.3, validated before anything starts.
// FromEnv fills every field, defaults included; for a knob documented "0 disables", a zero field means
// disabled (translated to mux.Off where the mux takes it).
type Config struct {
	Home              string        // VIBE_HOME, default ~/.vibe-seller
	BrowserUse        string        // VIBE_BROWSER_USE: absolute path of the real browser-use CLI; "" = not found
	BrowserUseProblem string        // why BrowserUse is empty, for ensure's answer
	BrowserUseFrom    string        // how BrowserUse was found: api.BrowserUseFromEnv or api.BrowserUseFromPath
	Chrome            string        // VIBE_CHROME: the Chromium binary; "" = search PATH
	ChromeTransport   string        // VIBE_CHROME_TRANSPORT (pipe): how launched Chromium is reached, pipe or port
	Shim              string        // VIBE_SHIM: the wrapshim binary; default beside this executable
	ProxyPortBase     int           // VIBE_PROXY_PORT_BASE (9400)
	CallTimeout       time.Duration // VIBE_CALL_TIMEOUT_S (120), baked into shims
	WorkerSlots       int           // VIBE_BROWSER_WORKER_SLOTS (3), baked into shims
	Idle              time.Duration // VIBE_BROWSER_IDLE_S (300); 0 disables the idle sweep
	TabCap            int           // VIBE_TAB_CAP (12); 0 disables
	StartTimeout      time.Duration // VIBE_BROWSER_START_TIMEOUT_S (180); 0 disables
	RelaunchMax       int           // VIBE_BROWSER_RELAUNCH_MAX (3); 0 disables the budget
	RelaunchWindow    time.Duration // VIBE_BROWSER_RELAUNCH_WINDOW_S (600)
	MuxMaxClients     int           // VIBE_MUX_MAX_CLIENTS (16)
	MuxGrace          time.Duration // VIBE_MUX_GRACE_S (480)
	TaskLease         time.Duration // VIBE_TASK_LEASE_S (3600)
	ReapInterval      time.Duration // VIBE_REAP_INTERVAL_S (300)
	DisableReaper     bool          // VIBE_DISABLE_DAEMON_SWEEP
	KeepBrowsers      bool          // VIBE_KEEP_BROWSERS_ON_EXIT
	Headless          *bool         // VIBE_HEADLESS; nil = headless when there is no display
	ZiniaoClient      []string      // VIBE_ZINIAO_CLIENT, else the system's way (macOS: open -a ziniao); nil = never started
	UIAddr            string        // VIBE_UI_ADDR (127.0.0.1:9399): the web UI's host:port; "" = off
	UIAllowRemote     bool          // VIBE_UI_ALLOW_REMOTE: a non-loopback UIAddr is allowed
	UIUsers           []string      // VIBE_UI_USERS: users besides the manager's own and root who may use the web UI (comma-separated); never a store's agent or browser user
	HandoffWaitMax    time.Duration // VIBE_HANDOFF_WAIT_MAX_S (3600): the longest an --ask-human waits
	NotifyURL         string        // VIBE_NOTIFY_URL: where handoffs and alerts are POSTed; "" = nowhere
	ProxyCheckURL     string        // VIBE_PROXY_CHECK_URL: a what-is-my-IP URL fetched through each store's proxy; "" = none
	DownloadKeepDays  int           // VIBE_DOWNLOAD_KEEP_DAYS (30): downloads folders older than this are pruned; 0 keeps them
	AgentUser         string        // VIBE_AGENT_USER: the agent user of a store that names none (SPEC §14); "" = none
	Timeline          string        // VIBE_TIMELINE (full): what a store that names no mode records (SPEC §15): full, meta or off
	TimelineKeepDays  int           // VIBE_TIMELINE_KEEP_DAYS (30): timeline entries older than this are pruned; 0 keeps them
	TimelineMaxMB     int           // VIBE_TIMELINE_MAX_MB (200): a task's timeline (entries and shots); oldest shots dropped first, then its calls refused
	DownloadMaxMB     int           // VIBE_DOWNLOAD_MAX_MB (1024): a task's downloads; one that passes it is cancelled
	HandoffMax        int           // VIBE_HANDOFF_MAX (3): a task's open handoffs; one more is refused
	TaskEventsPerMin  int           // VIBE_TASK_EVENTS_PER_MIN (20): a task's reported events and handoffs asked, per minute
	AgentConnMax      int           // VIBE_AGENT_CONN_MAX (64): open connections to run/agent.sock per peer uid
	AgentIdle         time.Duration // VIBE_AGENT_IDLE_S (30): an agent.sock connection silent this long is closed
	LoginCheckpoint   time.Duration // VIBE_LOGIN_CHECKPOINT_S (2): the most often a running browser's cookie jar is checkpointed (SPEC §18); 0 = never
	SnapshotEvery     time.Duration // VIBE_SNAPSHOT_EVERY (6h): how often a browser that keeps running is snapshotted; 0 = only at clean stops
	SnapshotKeep      int           // VIBE_SNAPSHOT_KEEP (5): snapshots kept per store, newest first
	SnapshotDir       string        // VIBE_SNAPSHOT_DIR ($VIBE_HOME/snapshots): where snapshots are kept (absolute)
	SnapshotKey       string        // VIBE_SNAPSHOT_KEY: the key that seals checkpoints and snapshots; "" = $VIBE_HOME/snapshot.key (made once)
	Cluster           Cluster       // VIBE_CLUSTER*, VIBE_HOST, VIBE_ADVERTISE (SPEC §19); its zero value is single-host mode

	// MuxTiming overrides the muxes' keepalive and reconnect timing; only tests set it (no knob exists for it).
	MuxTiming browsers.MuxTiming
}

// knob describes one VIBE_* variable: its default and accepted range.
type knob struct {
	name     string
	def, lo  int
	hi       int
	seconds  *time.Duration
	integer  *int
	boolean  *bool
	optional **bool
	address  *string // host:port, or "off" (stored as "")
	defAddr  string
	webURL   *string // an http(s) URL, or "" for none
	choice   *string // one of choices; the first is the default
	choices  []string
	every    *time.Duration // a Go duration (90m, 6h); def, lo and hi in seconds; 0 = off
}

// DefaultUIAddr is where the web UI listens unless VIBE_UI_ADDR says otherwise.
const DefaultUIAddr = "127.0.0.1:9399"

// FromEnv builds the configuration from the environment (getenv is os.Getenv in production), validating
// every knob: an unparseable or out-of-range value is an error naming the variable and the accepted range.
func FromEnv(getenv func(string) string) (*Config, error) {
	c := &Config{Home: getenv("VIBE_HOME"), Chrome: getenv("VIBE_CHROME"), Shim: getenv("VIBE_SHIM"),
		AgentUser: strings.TrimSpace(getenv("VIBE_AGENT_USER"))}
	if v := strings.TrimSpace(getenv("VIBE_BROWSER_USER")); v != "" {
		// One user for every store's browser is what SPEC §20 forbids, so the knob is gone rather than kept
		// for doctor to fail: a store names its own browser user, or the manager makes it one.
		return nil, fmt.Errorf("VIBE_BROWSER_USER=%s is no longer read: two stores must never share a browser user "+
			"(one could read the other's profile and use its proxy), so a root manager makes each store with an agent "+
			"user or a proxy a browser user of its own, vibe-b-<slug>; unset VIBE_BROWSER_USER, and to keep one store's "+
			"browser on %s: vibe-browser store set STORE --browser-user %s", v, v, v)
	}
	if c.Home == "" {
		c.Home = api.DefaultHome()
	}
	home, err := filepath.Abs(c.Home)
	if err != nil {
		return nil, fmt.Errorf("VIBE_HOME %q: %w", c.Home, err)
	}
	c.Home = home
	knobs := []knob{
		{name: "VIBE_PROXY_PORT_BASE", def: 9400, lo: 1024, hi: 65000, integer: &c.ProxyPortBase},
		{name: "VIBE_CALL_TIMEOUT_S", def: api.DefaultCallTimeoutS, lo: 1, hi: 86400, seconds: &c.CallTimeout},
		{name: "VIBE_BROWSER_WORKER_SLOTS", def: 3, lo: 0, hi: 99, integer: &c.WorkerSlots},
		{name: "VIBE_BROWSER_IDLE_S", def: 300, lo: 0, hi: 30 * 86400, seconds: &c.Idle},
		{name: "VIBE_TAB_CAP", def: mux.DefaultTabCap, lo: 0, hi: 10000, integer: &c.TabCap},
		{name: "VIBE_BROWSER_START_TIMEOUT_S", def: 180, lo: 0, hi: 86400, seconds: &c.StartTimeout},
		{name: "VIBE_BROWSER_RELAUNCH_MAX", def: 3, lo: 0, hi: 1000, integer: &c.RelaunchMax},
		{name: "VIBE_BROWSER_RELAUNCH_WINDOW_S", def: 600, lo: 1, hi: 30 * 86400, seconds: &c.RelaunchWindow},
		{name: "VIBE_MUX_MAX_CLIENTS", def: mux.DefaultMaxClients, lo: 1, hi: 4096, integer: &c.MuxMaxClients},
		{name: "VIBE_MUX_GRACE_S", def: int(mux.DefaultGrace / time.Second), lo: 0, hi: 30 * 86400, seconds: &c.MuxGrace},
		{name: "VIBE_TASK_LEASE_S", def: 3600, lo: 1, hi: 30 * 86400, seconds: &c.TaskLease},
		{name: "VIBE_REAP_INTERVAL_S", def: 300, lo: 1, hi: 86400, seconds: &c.ReapInterval},
		{name: "VIBE_DISABLE_DAEMON_SWEEP", boolean: &c.DisableReaper},
		{name: "VIBE_KEEP_BROWSERS_ON_EXIT", boolean: &c.KeepBrowsers},
		{name: "VIBE_HEADLESS", optional: &c.Headless},
		{name: "VIBE_UI_ADDR", address: &c.UIAddr, defAddr: DefaultUIAddr},
		{name: "VIBE_UI_ALLOW_REMOTE", boolean: &c.UIAllowRemote},
		{name: "VIBE_HANDOFF_WAIT_MAX_S", def: api.DefaultHandoffWaitMaxS, lo: 1, hi: 86400, seconds: &c.HandoffWaitMax},
		{name: "VIBE_NOTIFY_URL", webURL: &c.NotifyURL},
		{name: "VIBE_PROXY_CHECK_URL", webURL: &c.ProxyCheckURL},
		{name: "VIBE_DOWNLOAD_KEEP_DAYS", def: 30, lo: 0, hi: 36500, integer: &c.DownloadKeepDays},
		{name: "VIBE_CHROME_TRANSPORT", choice: &c.ChromeTransport,
			choices: []string{string(chrome.TransportPipe), string(chrome.TransportPort)}},
		{name: "VIBE_TIMELINE", choice: &c.Timeline, choices: []string{api.TimelineFull, api.TimelineMeta, api.TimelineOff}},
		{name: "VIBE_TIMELINE_KEEP_DAYS", def: 30, lo: 0, hi: 36500, integer: &c.TimelineKeepDays},
		{name: "VIBE_TIMELINE_MAX_MB", def: 200, lo: 1, hi: 1 << 20, integer: &c.TimelineMaxMB},
		{name: "VIBE_DOWNLOAD_MAX_MB", def: 1024, lo: 1, hi: 1 << 24, integer: &c.DownloadMaxMB},
		{name: "VIBE_HANDOFF_MAX", def: 3, lo: 1, hi: 1000, integer: &c.HandoffMax},
		{name: "VIBE_TASK_EVENTS_PER_MIN", def: 20, lo: 1, hi: 100000, integer: &c.TaskEventsPerMin},
		{name: "VIBE_AGENT_CONN_MAX", def: 64, lo: 1, hi: 100000, integer: &c.AgentConnMax},
		{name: "VIBE_AGENT_IDLE_S", def: 30, lo: 1, hi: 3600, seconds: &c.AgentIdle},
		{name: "VIBE_LOGIN_CHECKPOINT_S", def: 2, lo: 0, hi: 3600, seconds: &c.LoginCheckpoint},
		{name: "VIBE_SNAPSHOT_EVERY", def: int(6 * time.Hour / time.Second), lo: 0, hi: 30 * 86400, every: &c.SnapshotEvery},
		{name: "VIBE_SNAPSHOT_KEEP", def: 5, lo: 1, hi: 1000, integer: &c.SnapshotKeep},
	}
	for _, k := range knobs {
		if err := k.parse(getenv(k.name)); err != nil {
			return nil, err
		}
	}
	if err := c.snapshotPlaces(getenv); err != nil {
		return nil, err
	}
	if err := checkUIAddr(c.UIAddr, c.UIAllowRemote); err != nil {
		return nil, err
	}
	if c.Cluster, err = clusterKnobs(getenv, os.Hostname); err != nil {
		return nil, err
	}
	// In a cluster a browser must not outlive its manager past its store's lease (SPEC §19): only a keeper
	// can stop it then (the pipe), and a quit may not leave it running.
	switch {
	case c.Cluster.On() && c.ChromeTransport == string(chrome.TransportPort):
		return nil, fmt.Errorf("VIBE_CHROME_TRANSPORT=port with cluster mode (VIBE_CLUSTER or VIBE_CLUSTER_NODE): a cluster's " +
			"browsers run on the pipe, whose keeper stops a browser its manager left; unset VIBE_CHROME_TRANSPORT")
	case c.Cluster.On() && c.KeepBrowsers:
		return nil, fmt.Errorf("VIBE_KEEP_BROWSERS_ON_EXIT with cluster mode (VIBE_CLUSTER or VIBE_CLUSTER_NODE): another host " +
			"takes a store once its lease lapses, so a quitting host stops its browsers; unset VIBE_KEEP_BROWSERS_ON_EXIT")
	}
	if c.UIUsers, err = parseUIUsers(getenv("VIBE_UI_USERS"), c.AgentUser); err != nil {
		return nil, err
	}
	c.BrowserUse, c.BrowserUseProblem = findBrowserUse(getenv("VIBE_BROWSER_USE"), getenv("PATH"), c.Home)
	if c.BrowserUse != "" {
		c.BrowserUseFrom = api.BrowserUseFromPath
		if getenv("VIBE_BROWSER_USE") != "" {
			c.BrowserUseFrom = api.BrowserUseFromEnv
		}
	}
	c.ZiniaoClient = ziniao.DefaultCommand()
	if explicit := getenv("VIBE_ZINIAO_CLIENT"); explicit != "" {
		if !filepath.IsAbs(explicit) {
			return nil, fmt.Errorf("VIBE_ZINIAO_CLIENT=%q: want the absolute path of the Ziniao client executable", explicit)
		}
		if err := executable(explicit); err != nil {
			return nil, fmt.Errorf("VIBE_ZINIAO_CLIENT=%q: %v", explicit, err)
		}
		c.ZiniaoClient = []string{explicit}
	}
	return c, nil
}

func (k knob) parse(raw string) error {
	raw = strings.TrimSpace(raw)
	if k.address != nil {
		return k.parseAddress(raw)
	}
	if k.webURL != nil {
		return k.parseWebURL(raw)
	}
	if k.choice != nil {
		switch {
		case raw == "":
			*k.choice = k.choices[0]
		case slices.Contains(k.choices, raw):
			*k.choice = raw
		default:
			return fmt.Errorf("%s=%q: want one of %s (default %s)", k.name, raw, strings.Join(k.choices, ", "), k.choices[0])
		}
		return nil
	}
	if k.every != nil {
		return k.parseEvery(raw)
	}
	if k.boolean != nil || k.optional != nil {
		if raw == "" {
			return nil
		}
		v, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("%s=%q is not a boolean: use 1 or 0 (true or false)", k.name, raw)
		}
		if k.boolean != nil {
			*k.boolean = v
		} else {
			*k.optional = &v
		}
		return nil
	}
	v := k.def
	if raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < k.lo || n > k.hi {
			return fmt.Errorf("%s=%q is out of range: want an integer from %d to %d (default %d)", k.name, raw, k.lo, k.hi, k.def)
		}
		v = n
	}
	if k.seconds != nil {
		*k.seconds = time.Duration(v) * time.Second
	} else {
		*k.integer = v
	}
	return nil
}

// parseEvery reads a duration knob written the Go way (90m, 6h, 1h30m); 0 turns off what it paces.
func (k knob) parseEvery(raw string) error {
	if raw == "" {
		*k.every = time.Duration(k.def) * time.Second
		return nil
	}
	d, err := time.ParseDuration(raw)
	if raw == "0" {
		d, err = 0, nil
	}
	if err != nil || d < time.Duration(k.lo)*time.Second || d > time.Duration(k.hi)*time.Second ||
		d != 0 && d < time.Minute {
		return fmt.Errorf("%s=%q: want a duration such as 90m or 6h, from 1m to %s, or 0 for never (default %s)",
			k.name, raw, time.Duration(k.hi)*time.Second, time.Duration(k.def)*time.Second)
	}
	*k.every = d
	return nil
}

// snapshotPlaces reads where snapshots go and the key that seals them (SPEC §18). The key is checked now,
// so a bad one stops the start naming the knob, and never logged.
func (c *Config) snapshotPlaces(getenv func(string) string) error {
	c.SnapshotDir = strings.TrimSpace(getenv("VIBE_SNAPSHOT_DIR"))
	switch {
	case c.SnapshotDir == "":
		c.SnapshotDir = filepath.Join(c.Home, "snapshots")
	case !filepath.IsAbs(c.SnapshotDir):
		return fmt.Errorf("VIBE_SNAPSHOT_DIR=%q: want an absolute path (default $VIBE_HOME/snapshots)", c.SnapshotDir)
	}
	c.SnapshotDir = filepath.Clean(c.SnapshotDir)
	c.SnapshotKey = strings.TrimSpace(getenv("VIBE_SNAPSHOT_KEY"))
	if c.SnapshotKey != "" {
		if _, err := seal.ParseKey(c.SnapshotKey); err != nil {
			return fmt.Errorf("VIBE_SNAPSHOT_KEY: %w", err)
		}
	}
	return nil
}

// parseAddress reads a host:port knob; "off" disables what it configures.
func (k knob) parseAddress(raw string) error {
	switch raw {
	case "":
		raw = k.defAddr
	case "off":
		*k.address = ""
		return nil
	}
	host, port, err := net.SplitHostPort(raw)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%s=%q is not an address: want host:port with a port from 0 to 65535 (default %s), or off",
			k.name, raw, k.defAddr)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("%s=%q listens on every interface: name the one address people will use (host:port), "+
			"since the UI refuses requests whose Host is not its own address", k.name, raw)
	}
	*k.address = raw
	return nil
}

// parseWebURL reads an http(s) URL knob; empty leaves it unset.
func (k knob) parseWebURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("%s=%q is not an http(s) URL: want http://host[:port]/path or https://host[:port]/path "+
			"(no user:password@; put a secret in the path or query), or leave it unset", k.name, raw)
	}
	*k.webURL = u.String()
	return nil
}

// checkUIAddr refuses a UI reachable from other machines unless that was asked for: whoever reaches it
// can watch and, with a login code, drive every store's browser.
func checkUIAddr(addr string, allowRemote bool) error {
	if addr == "" || allowRemote {
		return nil
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("VIBE_UI_ADDR=%q is not a loopback address: other machines could reach the web UI; "+
		"use 127.0.0.1:PORT, or set VIBE_UI_ALLOW_REMOTE=1 to serve it on that address", addr)
}

// findBrowserUse resolves the real browser-use CLI to an absolute path: explicit when given (it must be an
// executable file), else the first browser-use on PATH outside home/bin (which holds our own shims).
// There is no bare-name fallback: a wrapper forwarding to "browser-use" would re-resolve to itself.
func findBrowserUse(explicit, path, home string) (string, string) {
	if explicit != "" {
		if !filepath.IsAbs(explicit) {
			return "", fmt.Sprintf("VIBE_BROWSER_USE=%q is not an absolute path", explicit)
		}
		if err := executable(explicit); err != nil {
			return "", fmt.Sprintf("VIBE_BROWSER_USE=%q: %v", explicit, err)
		}
		return explicit, ""
	}
	ours := filepath.Join(home, "bin") + string(filepath.Separator)
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, "browser-use")
		if strings.HasPrefix(p, ours) {
			continue
		}
		if executable(p) == nil {
			return p, ""
		}
	}
	return "", "no real browser-use CLI was found on the manager's PATH (outside " + ours +
		"); install browser-use 0.13+ or set VIBE_BROWSER_USE to its absolute path, then restart the manager"
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// ShimPath is the wrapshim binary copied into every wrapper directory.
func (c *Config) ShimPath() (string, error) {
	if c.Shim != "" {
		return c.Shim, executable(c.Shim)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(exe), "wrapshim")
	return p, executable(p)
}

// Path is a path under the home directory (SPEC §2).
func (c *Config) Path(parts ...string) string {
	return filepath.Join(append([]string{c.Home}, parts...)...)
}

// SocketPath is the owner's socket, run/manager.sock.
func (c *Config) SocketPath() string { return api.SocketPath(c.Home) }

// Browsers is the part of the configuration the browser fleet takes.
func (c *Config) Browsers() browsers.Config {
	return browsers.Config{Home: c.Home, Chrome: c.Chrome, ChromeTransport: chrome.Transport(c.ChromeTransport), Headless: c.Headless, ZiniaoClient: c.ZiniaoClient,
		ProxyPortBase: c.ProxyPortBase, StartTimeout: c.StartTimeout, RelaunchMax: c.RelaunchMax,
		RelaunchWindow: c.RelaunchWindow, TabCap: c.TabCap, MuxMaxClients: c.MuxMaxClients, MuxGrace: c.MuxGrace,
		Idle: c.Idle, MuxTiming: c.MuxTiming, AgentUser: c.AgentUser, LoginCheckpoint: c.LoginCheckpoint,
		SnapshotEvery: c.SnapshotEvery, SnapshotKeep: c.SnapshotKeep, SnapshotDir: c.SnapshotDir, SnapshotKey: c.SnapshotKey}
}

// StoreFacts decides store s's facts the way starting its browser would.
func (c *Config) StoreFacts(s state.Store) (browsers.StoreFacts, error) {
	bc := c.Browsers()
	return bc.StoreFacts(s)
}

// StoreUsers names store s's agent and browser users the way starting its processes would (SPEC §14, §20):
// its own settings, then VIBE_AGENT_USER and the browser user the manager makes for it; "" for none.
func (c *Config) StoreUsers(s state.Store) (agent, browser string, err error) {
	sp, err := browsers.StoreSpec(s)
	if err != nil {
		return "", "", err
	}
	bc := c.Browsers()
	agent, browser = bc.UserNames(sp)
	if s.Backend != state.BackendChrome {
		browser = "" // the manager starts no browser of its own for it
	}
	return agent, browser, nil
}

// KeeperDirs is every folder keepers may have files in: run/ and each browser user's in run/keepers/.
func (c *Config) KeeperDirs() []string {
	bc := c.Browsers()
	return bc.KeeperDirs()
}

// HeadlessByDefault reports whether a Chromium store without its own setting (and the web browser) runs
// headless: VIBE_HEADLESS, else headless when there is no display.
func (c *Config) HeadlessByDefault() bool {
	bc := c.Browsers()
	return bc.HeadlessByDefault()
}
