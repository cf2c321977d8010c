package mux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/mux/clientid"
	"vibebrowser/mux/downloads"
	"vibebrowser/mux/sys/osuser"
)

// Config configures a Mux. The zero value of every field means its documented default; a field that can
// be switched off says so and takes Off for it. Negative values other than Off are refused.
type Config struct {
	// Upstream is the browser endpoint, in one of three forms: "http://127.0.0.1:PORT" (the browser
	// WebSocket URL is discovered through /json/version), a ws:// browser URL, or
	// "unix:/abs/path/keep-<key>.sock", the socket of the keeper that holds a browser's DevTools pipe
	// (SPEC §13: its hello, then NUL-ended CDP messages; the version comes from Browser.getVersion).
	Upstream string
	// Listener is an optional pre-bound listener; when nil the mux listens on Addr, or on nothing with
	// Port.
	Listener net.Listener
	// Addr is "127.0.0.1:PORT", used when Listener and Port are unset.
	Addr string
	// Port is the port of a listener the caller serves itself, handing the mux its requests (ServeHTTP):
	// the manager keeps a store's port bound while its browser sleeps. The mux then binds nothing.
	Port int
	// Token is the store token, required as the first path segment of every request.
	Token string
	// DownloadDir is the store's downloads folder (SPEC §12): Chrome downloads into its downloads.IncomingDir, and
	// each finished file is moved to the folder of the client that started it (clientid.OwnerDir). Empty
	// leaves downloads to the clients: their setDownloadBehavior is forwarded as sent.
	DownloadDir string
	// Home is the manager's home: a local file under it is never handed to the browser for a client (SPEC
	// §13), except from that client's own folders (its DownloadDir folder, AgentDir). Empty: no such rule.
	Home string
	// AgentDir is the store's agent area (SPEC §14), a client's own folder under Home; empty for none.
	AgentDir string
	// Agent is the store's agent user (SPEC §14), nil for none: a local file handed to the browser must be
	// one it may read itself, and the downloads folders and files are its own (0700, 0600).
	Agent *osuser.User
	// Browser is the user the store's Chromium runs as, nil for the manager's: it writes the downloads'
	// incoming folder, so that folder is its own.
	Browser *osuser.User
	// TabCap is the per-client tab cap; beyond it the client's least recently used tab is closed.
	// Default DefaultTabCap; Off: no cap.
	TabCap int
	// MaxClients bounds connected clients; beyond it new clients get 503. Default DefaultMaxClients.
	MaxClients int
	// SharedClients are the client ids every task of the store may use, from any host of a cluster (the
	// aux session): they are never bound to the host of their first connection (hostbind.go).
	SharedClients []string
	// Grace is how long a disconnected client's tabs are kept for it to reconnect. Default DefaultGrace;
	// Off: no grace period, a disconnected client's tabs close at once.
	Grace time.Duration
	// HoldGrace is how long a person's takeover of a tab outlives the holder's last view (a viewer that
	// reconnects in time holds it again). Default DefaultHoldGrace; Off: the hold ends with the last view.
	HoldGrace time.Duration
	// FreshLaunch runs the startup cleanup of orphan http(s) tabs. Set it only for a browser this
	// manager just launched, never when adopting a running one.
	FreshLaunch bool
	// LaunchedEachConnection runs Hooks.Launched on every connection to the browser, not only a fresh
	// launch's: for a browser the manager does not launch (a Ziniao environment, a cdp endpoint), which may
	// have been restarted or used elsewhere between two connections.
	LaunchedEachConnection bool
	// KeepLastPage never closes the browser's last page (closing it kills a Ziniao environment); the
	// page is disowned instead.
	KeepLastPage bool
	// Ownership is the initial client id -> target ids map, for adopting a browser after a manager
	// restart. Those clients start disconnected, in their grace period.
	Ownership map[string][]string
	// Hooks are optional callbacks into the manager.
	Hooks Hooks
	// Log is the mux's logger. The caller names the component (the manager adds component "mux"); the
	// mux adds only its own fields (port, client, target, …), never a component key of its own.
	Log zerolog.Logger

	// QueueBytes bounds each client's send queue; overflow disconnects that client. Default 64 MiB.
	QueueBytes int
	// ClientMessageLimit is the largest message a client may send. Default 100 MB (Chrome's limit).
	ClientMessageLimit int
	// UpstreamMessageLimit is the largest message accepted from the browser. Default 256 MB (Chrome's).
	UpstreamMessageLimit int
	// PingInterval is how long a client, or the browser, may stay silent before it is pinged (the browser
	// with a Browser.getVersion of the mux's own). Default 30s.
	PingInterval time.Duration
	// PongTimeout is how long a pinged peer has to answer before it is dropped: a client into its grace
	// period, the browser's connection into a reconnect (a hung browser ends in the relaunch hook). A
	// browser behind a keeper has as long to answer the Browser.getVersion that opens each connection.
	// Default 60s.
	PongTimeout time.Duration
	// WriteTimeout bounds one write to a client or to the browser. Default 30s.
	WriteTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the upstream reconnect backoff. Defaults 1s and 30s.
	ReconnectMin, ReconnectMax time.Duration
	// ReconnectTries is the number of reconnect attempts before Hooks.Relaunch is called. Default 10.
	ReconnectTries int
}

// Hooks are the manager's callbacks. Every field is optional.
type Hooks struct {
	// Relaunch starts a fresh browser after the reconnect attempts are spent and returns its endpoint, in
	// any of Config.Upstream's forms (a browser may come back behind a keeper or on a port).
	Relaunch func(ctx context.Context) (newUpstream string, err error)
	// OwnershipChanged receives a snapshot (client id -> target ids) when ownership changes, for
	// persistence: at once when a client gained a target, shortly after (ownershipSettle) when targets
	// were only taken away; a snapshot equal to the last one is not passed again. Calls come from one
	// goroutine, in order, never under the mux's lock.
	OwnershipChanged func(map[string][]string)
	// Downloaded receives each download filed under DownloadDir, after its owner was told it completed.
	// Calls come from the goroutine that filed it, never under the mux's lock.
	Downloaded func(downloads.Download)
	// Deliver sends a download filed here for a client of another host (Download.Host, SPEC §19) to that
	// host before its client hears "completed", with the client's own-copy request (nil for none), and
	// returns where the client finds the file there. ok false: not delivered, and the hook said why (its log
	// and events); the client is then told the file here. It may take a while (bounded by the hook), and is
	// called from the goroutine that filed the download, never under the mux's lock. nil: no copy is made
	// for such a client, whose downloadPath is on its own host, and it is told the file here.
	Deliver func(dl downloads.Download, own *downloads.OwnCopy) (clientPath string, ok bool)
	// DownloadRoom is how many more bytes the downloads of owner folder ownerDir may take (the manager's
	// per-task quota less what the folder holds), or a negative number for no bound. A download that would
	// take its owner's downloads in progress past it is cancelled: its owner hears "canceled", and
	// DownloadCut is told. It is called under the mux's lock, so it must answer from memory.
	DownloadRoom func(ownerDir string) int64
	// DownloadCut receives each download cancelled for its owner's room (Size: the bytes it had), from a
	// goroutine of its own, never under the mux's lock.
	DownloadCut func(downloads.Download)
	// Timeline receives each step of a client's tabs for the task timeline (SPEC §15): a page target created
	// for it, a top-level navigation (URL, then the title once Chrome knows it), a page closed, a person's
	// hold on it taken or given back. Calls come from one goroutine, in order, never under the mux's lock.
	Timeline func(TimelineEvent)
	// Launched runs on each connection to a freshly launched browser (FreshLaunch, Relaunched, after
	// Relaunch), once the mux is connected, in a goroutine of its own; clients' commands wait until it
	// returns (at most launchGateWait), so what it sets through the operator (SetCookies) is in the browser
	// before any client's first command. ctx ends with the mux.
	Launched func(ctx context.Context)
}

// Defaults of the Config fields the manager exposes as VIBE_* knobs (its knob table reads them).
const (
	// DefaultMaxClients is Config.MaxClients's default (VIBE_MUX_MAX_CLIENTS).
	DefaultMaxClients = 16
	// DefaultGrace is Config.Grace's default (VIBE_MUX_GRACE_S).
	DefaultGrace = 480 * time.Second
	// DefaultTabCap is Config.TabCap's default (VIBE_TAB_CAP).
	DefaultTabCap = 12
	// DefaultHoldGrace is Config.HoldGrace's default (SPEC §11: 30 s after the holder's connection is gone).
	DefaultHoldGrace = 30 * time.Second
)

// Off switches off a Config field that documents it (TabCap, Grace, HoldGrace). It is untyped, so it fits an int and
// a time.Duration alike; zero always means the field's default, never "off".
const Off = -1

const (
	defaultQueueBytes   = 64 << 20
	defaultClientLimit  = 100 << 20
	defaultUpLimit      = 256 << 20
	defaultPingInterval = 30 * time.Second
	defaultPongTimeout  = 60 * time.Second
	defaultWriteTimeout = 30 * time.Second
	defaultReconnectMin = time.Second
	defaultReconnectMax = 30 * time.Second
	defaultTries        = 10
)

// withDefaults validates c and fills its zero values.
func (c Config) withDefaults() (Config, error) {
	if c.Upstream == "" {
		return c, errors.New("mux: Upstream is required")
	}
	if err := checkUpstream(c.Upstream); err != nil {
		return c, fmt.Errorf("mux: Upstream: %w", err)
	}
	if c.Token == "" || strings.Contains(c.Token, "/") {
		return c, errors.New("mux: Token is required and must not contain '/'")
	}
	if n := btoi(c.Listener != nil) + btoi(c.Addr != "") + btoi(c.Port != 0); n != 1 {
		return c, fmt.Errorf("mux: %d of Listener, Addr and Port are set: want exactly one", n)
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("mux: Port %d: want 1-65535", c.Port)
	}
	for id := range c.Ownership {
		if !clientid.Valid(id) {
			return c, fmt.Errorf("mux: Ownership client id %q does not match %s", id, clientid.Form)
		}
	}
	err := errors.Join(
		setDefault("TabCap", &c.TabCap, DefaultTabCap, true),
		setDefault("MaxClients", &c.MaxClients, DefaultMaxClients, false),
		setDefault("Grace", &c.Grace, DefaultGrace, true),
		setDefault("HoldGrace", &c.HoldGrace, DefaultHoldGrace, true),
		setDefault("QueueBytes", &c.QueueBytes, defaultQueueBytes, false),
		setDefault("ClientMessageLimit", &c.ClientMessageLimit, defaultClientLimit, false),
		setDefault("UpstreamMessageLimit", &c.UpstreamMessageLimit, defaultUpLimit, false),
		setDefault("PingInterval", &c.PingInterval, defaultPingInterval, false),
		setDefault("PongTimeout", &c.PongTimeout, defaultPongTimeout, false),
		setDefault("WriteTimeout", &c.WriteTimeout, defaultWriteTimeout, false),
		setDefault("ReconnectMin", &c.ReconnectMin, defaultReconnectMin, false),
		setDefault("ReconnectMax", &c.ReconnectMax, defaultReconnectMax, false),
		setDefault("ReconnectTries", &c.ReconnectTries, defaultTries, false),
	)
	return c, err
}

// setDefault fills a zero *v with its default d and keeps a positive one, or Off where the field may be
// switched off (offOK). Anything else is an error naming the field and what it accepts.
func setDefault[T int | time.Duration](name string, v *T, d T, offOK bool) error {
	switch {
	case *v > 0 || offOK && *v == Off:
		return nil
	case *v == 0:
		*v = d
		return nil
	case offOK:
		return fmt.Errorf("mux: %s is %v: want a positive value, 0 for the default (%v) or mux.Off", name, *v, d)
	default:
		return fmt.Errorf("mux: %s is %v: want a positive value or 0 for the default (%v)", name, *v, d)
	}
}

// keeperPrefix starts an Upstream that names a keeper's socket.
const keeperPrefix = "unix:"

// checkUpstream accepts the three forms of Config.Upstream; its error names all three. A keeper's socket
// must be absolute and named as keepers name theirs, so that a relative path or the keeper's identity
// file (keep-<key>.json) is caught here, not at every reconnect.
func checkUpstream(endpoint string) error {
	for _, p := range []string{"http://", "https://", "ws://", "wss://"} {
		if strings.HasPrefix(endpoint, p) {
			return nil
		}
	}
	if path, ok := strings.CutPrefix(endpoint, keeperPrefix); ok {
		base := filepath.Base(path)
		if filepath.IsAbs(path) && filepath.Clean(path) == path &&
			strings.HasPrefix(base, "keep-") && strings.HasSuffix(base, ".sock") && len(base) > len("keep-.sock") {
			return nil
		}
	}
	return fmt.Errorf(`%q is none of the accepted forms: "http://HOST:PORT", "ws://HOST:PORT/devtools/browser/ID", "unix:/abs/path/keep-<key>.sock"`, endpoint)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
