// Package api is the manager's local API contract: its request and response types, the config it bakes beside
// each shim, and the Go client that the CLI, the shim and the tests use to reach the daemon over its unix socket.
package api

import (
	"slices"
	"time"

	"vibebrowser/mux/clientid"
)

// Route paths served by the manager under its unix socket. {ref} is a store's name, slug or id.
const (
	PathHealth        = "/v1/health"
	PathStatus        = "/v1/status"
	PathStores        = "/v1/stores"                        // GET list, POST create
	PathStore         = "/v1/stores/{ref}"                  // GET, PATCH, DELETE
	PathStoreBrowser  = "/v1/stores/{ref}/browser/{action}" // POST start, stop, ensure
	PathWeb           = "/v1/web"                           // GET: the web browser and its endpoints
	PathWebBrowser    = "/v1/web/{action}"                  // POST start, stop
	PathSessionEnsure = "/v1/sessions/ensure"
	PathTasks         = "/v1/tasks"            // GET list
	PathTask          = "/v1/tasks/{id}"       // GET, PUT (upsert), DELETE
	PathTaskToken     = "/v1/tasks/{id}/token" // POST TaskTokenRequest: register the task, mint its token (SPEC §14)
	PathWrappers      = "/v1/wrappers"         // POST: rewrite every wrapper
	PathEvents        = "/v1/events"
	PathReap          = "/v1/reap"
	PathUILogin       = "/v1/ui/login"           // POST: a one-time login code for the web UI
	PathStoreLogin    = "/v1/stores/{ref}/login" // POST: a human tab in the store's browser and a login to it
	PathDownloads     = "/v1/downloads"          // GET ?task=ID&store=S: finished downloads, oldest first
	PathMetrics       = "/metrics"
)

// Browser actions.
const (
	ActionStart  = "start"
	ActionStop   = "stop"
	ActionEnsure = "ensure"
)

// Browser statuses.
const (
	StatusRunning = "running"
	StatusStopped = "stopped"
)

// WebKey is the registry key and status key of the store-less web browser.
const WebKey = "_web"

// WebSlug is the store-less web browser's slug: its session name, its name in the UI's paths and in answers
// that name a store by slug (state reserves it: no store takes it).
const WebSlug = "web"

// StoreSpec creates a store.
type StoreSpec struct {
	Name    string      `json:"name"`
	Backend string      `json:"backend"`          // chrome (default), ziniao or cdp
	Ziniao  *ZiniaoSpec `json:"ziniao,omitempty"` // ziniao backend: the environment and its account
	// Host is the cluster host the store is placed on (SPEC §19); "" lets the placement rule choose. A
	// single host refuses it.
	Host string `json:"host,omitempty"`
	StoreSettings
}

// ZiniaoSpec names a Ziniao store environment and the account that owns it.
type ZiniaoSpec struct {
	Browser  string `json:"browser"` // browserOauth, or browserId (all digits)
	Company  string `json:"company"`
	Username string `json:"username"`
	Password string `json:"password"`
	Port     int    `json:"port,omitempty"` // the Ziniao client's HTTP port; 0 means 16851
}

// StoreUpdate changes a store; nil fields are left alone. In the settings, NoIdentity ("none") clears the
// proxy, time zone or language, and as a user is none; "" follows VIBE_AGENT_USER (and the browser user the
// manager makes for the store) or VIBE_TIMELINE again.
type StoreUpdate struct {
	Name *string `json:"name,omitempty"`
	StoreChanges
}

// NoIdentity in a StoreUpdate's Proxy, Timezone or Lang clears it; as AgentUser or BrowserUser it is none.
const NoIdentity = "none"

// BrowserState is a browser's run state as scripts see it.
type BrowserState struct {
	Status string `json:"status"` // StatusRunning or StatusStopped
	PID    int    `json:"pid"`
}

// Store is a store as the API and `store show --json` print it. The field names are fixed (SPEC §4.3).
type Store struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	Slug      string       `json:"slug"`
	Backend   string       `json:"backend"`
	ProxyPort int          `json:"proxy_port"`
	CDPHTTP   string       `json:"cdp_http"` // http://127.0.0.1:<port>/<token>: playwright connectOverCDP
	CDPWS     string       `json:"cdp_ws"`   // ws://127.0.0.1:<port>/<token>: puppeteer browserWSEndpoint; append /client-<id> for a stable id
	Browser   BrowserState `json:"browser"`
	// Host is the cluster host the store is placed on (SPEC §19); "" in single-host mode or not placed yet.
	Host     string `json:"host,omitempty"`
	CDPURL   string `json:"cdp_url,omitempty"`
	Headless *bool  `json:"headless,omitempty"`
	Wrapper  string `json:"wrapper,omitempty"` // bin/<slug> directory, when written
	// Ziniao stores: the environment and the account (company/username); the password is never shown.
	ZiniaoBrowser string `json:"ziniao_browser,omitempty"`
	ZiniaoAccount string `json:"ziniao_account,omitempty"`
	// The network identity (SPEC §16): the proxy redacted (scheme://user:***@host:port), the time zone and
	// the language; each empty when the store has none.
	Proxy    string `json:"proxy,omitempty"`
	Timezone string `json:"timezone,omitempty"`
	Lang     string `json:"lang,omitempty"`
	// ProxyError is how the running browser's proxy fails (unreachable, credentials refused), as its
	// forwarder last saw it; empty while it works.
	ProxyError string `json:"proxy_error,omitempty"`
	// ExitIP is what VIBE_PROXY_CHECK_URL answered through the store's proxy (its exit IP), checked every
	// few minutes; empty without a check URL, or until a check answered.
	ExitIP string `json:"exit_ip,omitempty"`
	// AgentUser and BrowserUser are who the store's agents and browser run as (SPEC §14), its own setting,
	// VIBE_AGENT_USER, or the browser user the manager makes for it (vibe-b-<slug>, SPEC §20); empty for the
	// manager's own user (then the boundary is by convention only).
	AgentUser   string `json:"agent_user,omitempty"`
	BrowserUser string `json:"browser_user,omitempty"`
	// Timeline is the store's timeline mode (SPEC §15) and TimelineFrom where it comes from ("store", or
	// "VIBE_TIMELINE" when the store names none).
	Timeline     string `json:"timeline"`
	TimelineFrom string `json:"timeline_from"`
	// CheckpointAt is when the store's newest cookie checkpoint was written, SnapshotAt when its newest
	// snapshot was taken (SPEC §18); zero when it has none.
	CheckpointAt time.Time `json:"checkpoint_at,omitzero"`
	SnapshotAt   time.Time `json:"snapshot_at,omitzero"`
}

// Browser is one running or known browser in the status.
type Browser struct {
	Key    string `json:"key"` // store id or WebKey
	Slug   string `json:"slug"`
	Status string `json:"status"`
	PID    int    `json:"pid"`
	// KeeperPID is the keeper holding a launched browser's pipe (SPEC §13); 0 on a port, or when stopped.
	KeeperPID int `json:"keeper_pid"`
	ProxyPort int `json:"proxy_port"`
	Clients   int `json:"clients"` // connected mux clients
	Tabs      int `json:"tabs"`
	Held      int `json:"held"` // tabs a person has taken over in the UI
	IdleS     int `json:"idle_s"`
	// StartedAt is when the running browser was started (or adopted); zero when stopped.
	StartedAt time.Time `json:"started_at,omitzero"`
	// RelaunchMax is VIBE_BROWSER_RELAUNCH_MAX (0: no budget); RelaunchesLeft is what is left of it in the
	// current window.
	RelaunchMax    int `json:"relaunch_max"`
	RelaunchesLeft int `json:"relaunches_left"`
	// Host is the cluster host whose browser this is (SPEC §19): for a store placed on another host, what
	// that host answered of it, or only its status there when it did not answer; "" on a single host.
	Host string `json:"host,omitempty"`
}

// WebBrowser is the store-less web browser with its endpoints, which answer whenever the manager runs
// (the same forms as a store's cdp_http and cdp_ws; empty only while its port is not bound).
type WebBrowser struct {
	Browser
	CDPHTTP string `json:"cdp_http,omitempty"`
	CDPWS   string `json:"cdp_ws,omitempty"`
}

// Task is an agent task as the manager tracks it.
type Task struct {
	ID    string `json:"id"`
	Store string `json:"store"` // store id, "" for web or unknown
	// StoreSlug is the store's slug, filled in the status (where the stores are at hand); "" with Store.
	StoreSlug  string    `json:"store_slug,omitempty"`
	Status     string    `json:"status"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
}

// TaskUpdate is the body of PUT PathTask.
type TaskUpdate struct {
	Store  string `json:"store,omitempty"` // a store name, slug or id
	Status string `json:"status"`
}

// TaskTokenRequest is the body of POST PathTaskToken: the store the task works on (a name, slug or id), or
// WebSlug for the web browser.
type TaskTokenRequest struct {
	Store string `json:"store"`
}

// TaskToken is a launcher's answer (SPEC §14): the task's token (VIBE_TASK_TOKEN, shown once, kept hashed)
// and everything an agent's environment is built from.
type TaskToken struct {
	Token       string `json:"token"`
	TaskID      string `json:"task_id"`
	StoreID     string `json:"store_id,omitempty"`   // "" for the web browser
	Slug        string `json:"slug"`                 // the store's slug, or WebKey
	AgentUser   string `json:"agent_user,omitempty"` // the OS user the agent runs as; "" = the manager's
	BinDir      string `json:"bin_dir"`              // the store's wrapper folder, first on the agent's PATH
	GuardDir    string `json:"guard_dir"`            // the guard's folder, second
	DownloadDir string `json:"download_dir"`         // VIBE_DOWNLOAD_DIR
	AgentDir    string `json:"agent_dir"`            // the store's agent area: the agent's HOME and TMPDIR are in it
}

// Status is the daemon's whole picture (`vibe-browser status`).
type Status struct {
	Version       string `json:"version"`
	PID           int    `json:"pid"`
	Home          string `json:"home"`
	BrowserUse    string `json:"browser_use"`
	BrowserUseErr string `json:"browser_use_error,omitempty"`
	// BrowserUseFrom is how the manager found BrowserUse: BrowserUseFromEnv or BrowserUseFromPath ("" with none).
	BrowserUseFrom string    `json:"browser_use_from,omitempty"`
	Stores         []Store   `json:"stores"`
	Browsers       []Browser `json:"browsers"`
	Tasks          []Task    `json:"tasks"`
	// Handoffs are the pending requests for a person's help, oldest first.
	Handoffs []Handoff `json:"handoffs"`
	// Host is this host's name and Hosts every host of its cluster, by name (SPEC §19); both empty in
	// single-host mode.
	Host  string        `json:"host,omitempty"`
	Hosts []ClusterHost `json:"hosts,omitempty"`
}

// ClusterHost is one host of the cluster as the answering host sees it.
type ClusterHost struct {
	Name      string   `json:"name"`
	Alive     bool     `json:"alive"`     // its heartbeat moved within the host TTL
	Advertise string   `json:"advertise"` // host:port of its door
	FreeMemMB int64    `json:"free_mem_mb"`
	Stores    []string `json:"stores"`   // the stores whose browsers run there
	QuietMs   int64    `json:"quiet_ms"` // since its heartbeat last moved, on the answering host's clock
	// Unreachable says why the answering host has nothing fresh from this host (SPEC §19 "One pane"): its
	// heartbeat stopped, or it did not answer within 1 s. "" when it answered, and for the answering host.
	Unreachable string `json:"unreachable,omitempty"`
}

// Reachable reports whether the answering host hears h: its heartbeat moves and it answered.
func (h ClusterHost) Reachable() bool { return h.Alive && h.Unreachable == "" }

// How a manager found its real browser-use CLI (Status.BrowserUseFrom).
const (
	BrowserUseFromEnv  = "VIBE_BROWSER_USE" // the variable named it
	BrowserUseFromPath = "PATH"             // the first browser-use on the manager's PATH outside its home's bin
)

// ReapResult says what a reaper pass did.
type ReapResult struct {
	Killed  []string `json:"killed"`
	Removed []string `json:"removed"`
	Kept    []string `json:"kept"`
}

// ValidTaskToken reports whether t has a task token's form (SPEC §14): 32 lowercase hex digits, 128 bits.
func ValidTaskToken(t string) bool {
	if len(t) != 32 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// TaskIDForm describes a valid task id (VIBE_TASK_ID), for messages. The first 8 characters name the task in
// BU_NAME and in daemon pid files, so they must be hex.
const TaskIDForm = "8 to 64 characters of [A-Za-z0-9-] whose first 8 are hex"

// ValidTaskID reports whether id has the form TaskIDForm describes. (Hand-written rather than a regexp: the
// shim runs on every agent call and compiling a regexp at start-up costs more than the whole check.)
func ValidTaskID(id string) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		hex := '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
		if i < 8 && !hex || !(isAlnum(c) || c == '-') {
			return false
		}
	}
	return true
}

// ValidBUName reports whether s is a browser-use session name: [A-Za-z0-9_-]{1,64}, browser-use's own
// check: a client id's characters, in at most 64 of them.
func ValidBUName(s string) bool { return len(s) <= 64 && clientid.Valid(s) }

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// Session kinds a shim asks for.
const (
	KindStore = "store"
	KindWeb   = "web"
)

// EnsureRequest is the shim's call: make the browser of a store (or the web browser) ready and register the
// calling task's lease.
type EnsureRequest struct {
	Kind     string `json:"kind"`               // KindStore or KindWeb
	StoreID  string `json:"store_id,omitempty"` // required for KindStore
	ClientID string `json:"client_id"`          // the mux client id the shim will connect as
	BUName   string `json:"bu_name"`            // the browser-use session name
	TaskID   string `json:"task_id,omitempty"`  // VIBE_TASK_ID of the caller, if any
	// Via is who asks: "" for the shim, ViaMCP for `vibe-browser mcp` (SPEC §17), ViaCDP for `vibe-browser
	// endpoint`; those need no
	// browser-use CLI.
	Via string `json:"via,omitempty"`
}

// Ways a client is driven other than by browser-use (EnsureRequest.Via): they need no browser-use CLI.
const (
	ViaMCP = "mcp" // `vibe-browser mcp`: an MCP server drives the client
	ViaCDP = "cdp" // `vibe-browser endpoint`: the agent's own CDP client (puppeteer, playwright) drives it
)

// EnsureResponse tells the shim where its browser-use daemon must connect.
type EnsureResponse struct {
	CDPWS string `json:"cdp_ws"` // ws://127.0.0.1:<port>/c/<capability>/client-<id>: this client's, no other's
	// DownloadDir is the folder the client's downloads land in (<home>/downloads/<slug>/<owner dir>), the
	// shim's VIBE_DOWNLOAD_DIR. Empty from a manager that predates it.
	DownloadDir string `json:"download_dir,omitempty"`
	// LeaseS is the task's lease (VIBE_TASK_LEASE_S) that this call renewed, 0 without a task: a caller that
	// holds its client for long (an MCP server) calls again well within it.
	LeaseS int `json:"lease_s,omitempty"`
	// Timeline is the store's timeline mode (SPEC §15): with TimelineFull the shim keeps the call's code and
	// output for its report, with TimelineMeta only the call's facts; TimelineOff or "" (a manager that
	// predates it) sends no report.
	Timeline string `json:"timeline,omitempty"`
}

// Download is one finished download (SPEC §12), as GET PathDownloads lists it.
type Download struct {
	ID       int64     `json:"id"`
	Store    string    `json:"store"` // store id, "" for the web browser
	Slug     string    `json:"slug"`  // the store's slug, or WebKey; "" for a store removed since
	Task     string    `json:"task,omitempty"`
	Client   string    `json:"client,omitempty"` // the mux client that started it; "" when unattributed
	OwnerDir string    `json:"owner_dir"`        // its folder under downloads/<slug>/
	GUID     string    `json:"guid"`
	URL      string    `json:"url"`
	Name     string    `json:"name"`
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	SHA256   string    `json:"sha256"`
	At       time.Time `json:"at"`
}

// Event kinds: the first is reported by shims (ShimEventKinds), the others by the manager itself.
const (
	EventWedgeUnrecoverable = "wedge_unrecoverable" // a session timed out twice in a row (shim exit 75)
	EventBrowserDied        = "browser_died"        // a browser exited under the manager and was buried
	EventBrowserRelaunched  = "browser_relaunched"  // a crashed or hung browser was relaunched behind its mux
	EventBudgetSpent        = "relaunch_budget_spent"
	EventBrowserAdopted     = "browser_adopted"      // a browser a previous manager left running was taken over
	EventStrayClosed        = "browser_stray_closed" // a browser left running that could not be adopted was closed
	EventIdleStop           = "browser_idle_stopped"
	EventDownloadCancelled  = "download_cancelled" // a task's download would have passed VIBE_DOWNLOAD_MAX_MB
	// SPEC §18's snapshots of a store's profile.
	EventSnapshotFailed  = "snapshot_failed"             // a snapshot, or a lost profile's rebuild, failed
	EventProfileRebuilt  = "profile_rebuilt"             // a lost profile folder was rebuilt from the newest snapshot at a launch
	EventProfileBroken   = "profile_broken"              // a profile Chromium would not start on was kept aside, the launch retried in a rebuilt one
	EventProfileRestored = "profile_restored"            // a person restored a snapshot (vibe-browser store restore)
	EventLoginRestored   = "login_restored"              // a launch set back cookies its browser had lost from the login checkpoint
	EventLoginUnreadable = "login_checkpoint_unreadable" // a launch found a login checkpoint it could not open or read
	// SPEC §19's cluster.
	EventBrowserFenced       = "browser_fenced"       // a store's lease was lost (taken, or not renewed in time): its browser was killed here
	EventStoreClash          = "store_clash"          // a store of the cluster and one of this host have one name or slug: neither is taken in
	EventStoreMoved          = "store_moved"          // a store moved from one host to another (vibe-browser store move): on both hosts
	EventDownloadUndelivered = "download_undelivered" // a download of another host's client was not delivered there: it stays on the store's host
)

// ShimEventKinds are the only kinds POST PathEvents takes: what a shim reports of its own session. Every
// other kind is raised by the manager itself and never taken from a caller.
var ShimEventKinds = []string{EventWedgeUnrecoverable}

// ShimEventKind reports whether kind is one a shim reports (POST PathEvents), not the manager's own.
func ShimEventKind(kind string) bool { return slices.Contains(ShimEventKinds, kind) }

// MaxEventMessage bounds a reported event's message, in bytes.
const MaxEventMessage = 2000

// Whose words an event's message or a timeline entry holds (Event.From, Entry.From).
const (
	FromManager = "manager" // the manager's own
	FromAgent   = "agent"   // an agent's: a shim's report, a handoff's reason, a call's code and output
	FromPerson  = "person"  // a person's: a handoff's answer
)

// Event is something that happened to a browser or a task. Shims report theirs (POST PathEvents); the
// manager records its own, and GET PathEvents lists the recent ones, oldest first.
type Event struct {
	At      time.Time `json:"at,omitzero"` // set by the manager
	Kind    string    `json:"kind"`
	StoreID string    `json:"store_id,omitempty"` // empty for the web browser
	BUName  string    `json:"bu_name,omitempty"`
	TaskID  string    `json:"task_id,omitempty"`
	Message string    `json:"message,omitempty"`
	Handoff string    `json:"handoff,omitempty"` // the handoff's id, for its events
	// From is whose words Message holds (FromManager, FromAgent, FromPerson), set by the manager: whatever
	// shows an event says an agent's words are the agent's, never the manager's.
	From string `json:"from,omitempty"`
}

// UILogin is the answer of PathUILogin: a single-use code for the web UI and the URL that spends it.
type UILogin struct {
	URL       string    `json:"url"` // http://<ui address>/login?code=<code>
	Code      string    `json:"code"`
	ExpiresAt time.Time `json:"expires_at"`
}

// StoreLoginRequest is the body of PathStoreLogin.
type StoreLoginRequest struct {
	// URL is where the human tab opens: http(s), or empty for about:blank.
	URL string `json:"url,omitempty"`
}

// StoreLogin is the answer of PathStoreLogin: the human tab and a one-time login to the web UI that
// lands on its live view.
type StoreLogin struct {
	UILogin
	Store string `json:"store"` // the store's slug
	Tab   string `json:"tab"`   // the human tab's target id
}

// Health is the answer of PathHealth.
type Health struct {
	OK      bool   `json:"ok"`
	Version string `json:"version"`
	PID     int    `json:"pid"`
}
