package mux

import (
	"sort"
	"strings"
)

// The table of methods (SPEC §20): the mux's router decides every method of the protocol once. A method is
// forwarded as it came on the client's own sessions (the page's own domains, which agents' code calls
// freely), forwarded after a judge read its params (anything that takes a URL, a path, a target, a browser
// context or a stream handle, or acts beyond the page: the judged call is re-encoded from what was judged), or
// refused naming the method and the rule. A method the table does not know is refused. The operator (the UI's
// views and human tabs) is not a client: none of this applies to it.

// where says which sessions a method may be sent on.
type where int

const (
	// onPage: only on a session of one of the client's own targets (a page, its frames and workers).
	onPage where = iota
	// onAny: on the browser session too (methods browser-wide by nature, judged, or harmless there).
	onAny
)

// route is the table's decision for a method (or, as a domain's default, for the methods of a domain).
type route struct {
	where where
	// refuse, when set, is why the method is always refused.
	refuse string
	// check judges a call before mu is taken (it may read the disk or ask the browser) and may rewrite its
	// params; it returns what it refused ("" passes), reason saying why such a call is refused. A judged call
	// is re-encoded from what was judged before it goes (routeLocked judges ownership on the decoded params).
	check  func(m *Mux, c *conn, k *call) (refused string, err error)
	reason string
	// note says, for a forwarded method that takes a URL or a path, why forwarding it as it came is safe.
	note string
}

// Reasons shared by several entries.
const (
	pageOnlyRule   = "it goes only to a session of the client's own tabs (attach with Target.attachToTarget {flatten:true} and send it with that sessionId): on the browser session it would reach every tenant"
	unknownRule    = "the mux forwards only the methods in its table (SPEC §20), and this is not one of them"
	extensionsRule = "the profile's extensions belong to every client"
	pwaRule        = "the profile's installed apps belong to every client"
	traceRule      = "a trace records the browser process, where every tenant's navigations and URLs are"
	cookieJarRule  = "the default browser context's cookies are the store's login, every tenant's: a client clears only a browser context it created"
)

// domainRoutes are each domain's default. A domain not listed has no default: only its methods listed in
// methodRoutes exist for clients.
var domainRoutes = map[string]route{
	// The page's own domains: forwarded as they came, on the client's own sessions only.
	"Accessibility": {}, "Ads": {}, "Animation": {}, "Audits": {}, "Autofill": {}, "BackgroundService": {},
	"BluetoothEmulation": {}, "CacheStorage": {}, "Cast": {}, "Console": {}, "CrashReportContext": {}, "CSS": {},
	"Debugger": {}, "DeviceAccess": {}, "DeviceOrientation": {}, "DigitalCredentials": {}, "DOM": {},
	"DOMDebugger": {}, "DOMSnapshot": {}, "DOMStorage": {}, "Emulation": {}, "EventBreakpoints": {}, "FedCm": {},
	"Fetch": {}, "FileSystem": {}, "FindInPage": {}, "HeadlessExperimental": {}, "HeapProfiler": {},
	"IndexedDB": {}, "Input": {}, "Inspector": {}, "LayerTree": {}, "Log": {}, "Media": {}, "Memory": {},
	"Network": {}, "Overlay": {}, "Page": {}, "Performance": {}, "PerformanceTimeline": {}, "Preload": {},
	"Profiler": {}, "Runtime": {}, "Schema": {}, "Security": {}, "ServiceWorker": {}, "SmartCardEmulation": {},
	"Storage": {}, "WebAudio": {}, "WebAuthn": {}, "WebMCP": {},

	// Browser-wide domains: judged (ownership of targets, sessions, contexts, downloads; routeLocked).
	"Target":  {where: onAny, check: targetParams},
	"Browser": {where: onAny, check: targetParams},

	// Browser-wide reaches with nothing of a client's own to scope them to.
	"Tracing":    {where: onAny, refuse: traceRule},
	"SystemInfo": {where: onAny, refuse: "it reports every process of the browser, every tenant's"},
	"Tethering":  {where: onAny, refuse: "it opens ports of the browser's for the client, past the mux"},
	"Extensions": {where: onAny, refuse: extensionsRule},
	"PWA":        {where: onAny, refuse: pwaRule},
}

// methodRoutes are the methods decided apart from their domain's default.
var methodRoutes = map[string]route{
	// Target: one client's view of the shared browser (SPEC §5).
	"Target.attachToBrowserTarget":  {where: onAny, refuse: "a browser session would bypass the per-client isolation of Target.* and Browser.*"},
	"Target.exposeDevToolsProtocol": {where: onAny, refuse: "it hands page script unfiltered, browser-wide CDP"},
	"Target.setRemoteLocations":     {where: onAny, refuse: "it changes browser-wide discovery for every client"},
	"Target.sendMessageToTarget":    {where: onAny, refuse: "non-flattened sessions are not multiplexed; attach with flatten:true"},
	"Target.openDevTools":           {where: onAny, refuse: "it opens a DevTools window, a browser page that reaches every tenant's tabs"},
	"Target.attachToTarget":         {where: onAny, check: attachParams, reason: "non-flattened sessions are not multiplexed; attach with flatten:true"},
	"Target.createTarget":           {where: onAny, check: createTargetParams, reason: urlRule},
	"Target.createBrowserContext": {where: onAny, check: contextParams,
		reason: "a store's traffic leaves through its own proxy only: a client may not give a browser context a proxy of its own"},
	"Target.disposeBrowserContext": {where: onAny, check: targetParams,
		reason: "only a browser context this client created may be disposed (the default one holds every tenant's tabs and the logged-in profile)"},

	// Browser: what would hurt every tenant.
	"Browser.crash":                 {where: onAny, refuse: "it crashes the browser every client shares"},
	"Browser.crashGpuProcess":       {where: onAny, refuse: "it crashes the GPU process of the browser every client shares"},
	"Browser.executeBrowserCommand": {where: onAny, refuse: "it runs a command of the browser's own UI, every tenant's"},
	"Browser.getVersion":            {where: onAny, note: "the version object, as /json/version serves it"},

	// URLs (SPEC §13): every method that opens a URL in a page, or fetches one with a page's rights.
	"Page.navigate":                      {check: urlsParams("url", "referrer"), reason: urlRule},
	"Page.navigateToHistoryEntry":        {check: historyEntry, reason: urlRule},
	"Network.loadNetworkResource":        {check: urlsParams("url"), reason: urlRule},
	"Fetch.continueRequest":              {check: urlsParams("url"), reason: urlRule},
	"Network.continueInterceptedRequest": {check: urlsParams("url"), reason: urlRule},

	// Local files (SPEC §13, §20): opened by the mux itself, and the browser gets its copy.
	"DOM.setFileInputFiles":   {check: filesParam, reason: fileRule},
	"Input.dispatchDragEvent": {check: dragFiles, reason: fileRule},
	"Page.handleFileChooser":  {check: filesParam, reason: fileRule}, // gone from current Chrome; older builds take files

	// Streams: a client reads only the streams the mux handed it.
	"IO.read":  {where: onAny, check: streamParam, reason: streamRule},
	"IO.close": {where: onAny, check: streamParam, reason: streamRule},

	// The store's login is every tenant's.
	"Network.clearBrowserCookies": {refuse: cookieJarRule},
	"Storage.clearCookies":        {where: onAny, check: cookieContext, reason: cookieJarRule},
	"Storage.getCookies":          {where: onAny, check: cookieContext, reason: "a client reads the cookies of the default browser context or of one it created"},
	"Storage.setCookies":          {where: onAny, check: cookieContext, reason: "a client sets the cookies of the default browser context or of one it created"},

	"Page.crash":                 {refuse: "it crashes a renderer process that other clients' tabs of the same site may share"},
	"Cast.startDesktopMirroring": {refuse: "it mirrors the whole screen, every tenant's tabs"},

	// Forwarded as they came although they name a URL or a path: what they name is not opened, or only what
	// the page itself already loaded.
	"Page.getResourceContent":                         {note: "reads a resource the frame already loaded"},
	"Page.searchInResource":                           {note: "searches a resource the frame already loaded"},
	"Page.addCompilationCache":                        {note: "the URL only keys the page's code cache"},
	"Page.setDocumentContent":                         {note: "writes HTML into the client's own frame"},
	"Page.addScriptToEvaluateOnNewDocument":           {note: "runs in the client's own page"},
	"Network.setCookie":                               {note: "the URL scopes a cookie of the store's jar, which its tasks share"},
	"Network.setCookies":                              {note: "the URLs scope cookies of the store's jar, which its tasks share"},
	"Network.getCookies":                              {note: "the URLs select cookies of the store's jar, which its tasks share"},
	"Network.deleteCookies":                           {note: "the URL selects cookies of the store's jar, which its tasks share"},
	"Network.setBlockedURLs":                          {note: "patterns the page's requests are matched against"},
	"Debugger.setBreakpointByUrl":                     {note: "a pattern scripts are matched against"},
	"Debugger.getScriptSource":                        {note: "a script the page already loaded"},
	"CSS.getStyleSheetText":                           {note: "a style sheet the page already loaded"},
	"Storage.getStorageKey":                           {note: "names an origin; opens nothing"},
	"Fetch.fulfillRequest":                            {note: "answers the page's own request; Chromium refuses a redirect to a browser page or file"},
	"Fetch.continueResponse":                          {note: "answers the page's own request; Chromium refuses a redirect to a browser page or file"},
	"Fetch.continueWithAuth":                          {note: "answers the page's own request"},
	"Emulation.setUserAgentOverride":                  {note: "changes the page's own headers"},
	"Network.setUserAgentOverride":                    {note: "changes the page's own headers"},
	"ServiceWorker.unregister":                        {note: "a registration of the store's profile, which its tasks share"},
	"ServiceWorker.updateRegistration":                {note: "a registration of the store's profile, which its tasks share"},
	"ServiceWorker.deliverPushMessage":                {note: "a registration of the store's profile, which its tasks share"},
	"FedCm.openUrl":                                   {note: "opens a URL the identity provider's config names, in a web dialog"},
	"CacheStorage.requestCachedResponse":              {note: "reads the page's origin's own cache"},
	"CacheStorage.requestEntries":                     {note: "lists the page's origin's own cache"},
	"Cast.enable":                                     {note: "the URL names a presentation to look for sinks of"},
	"Debugger.nextWasmDisassemblyChunk":               {note: "a stream of the page's own Wasm disassembly, on its own session"},
	"DOM.pushNodeByPathToFrontend":                    {note: "a path in the page's own DOM"},
	"DOMDebugger.setXHRBreakpoint":                    {note: "a pattern the page's requests are matched against"},
	"DOMDebugger.removeXHRBreakpoint":                 {note: "a pattern the page's requests are matched against"},
	"Fetch.enable":                                    {note: "intercepts the page's own requests (on the browser session it is refused, as every page domain is)"},
	"FileSystem.getDirectory":                         {note: "a folder of an origin's sandboxed file system, not a local path"},
	"Network.fetchSchemefulSite":                      {note: "names an origin; opens nothing"},
	"Network.getCertificate":                          {note: "names an origin; opens nothing"},
	"Page.enable":                                     {note: "the flag only turns on the file chooser event"},
	"Runtime.compileScript":                           {note: "the URL only names the script in stack traces"},
	"ServiceWorker.dispatchSyncEvent":                 {note: "a registration of the store's profile, which its tasks share"},
	"ServiceWorker.dispatchPeriodicSyncEvent":         {note: "a registration of the store's profile, which its tasks share"},
	"ServiceWorker.skipWaiting":                       {note: "a registration of the store's profile, which its tasks share"},
	"ServiceWorker.startWorker":                       {note: "a registration of the store's profile, which its tasks share"},
	"SmartCardEmulation.reportConnectResult":          {note: "answers the page's own emulated smart card request"},
	"SmartCardEmulation.reportBeginTransactionResult": {note: "answers the page's own emulated smart card request"},
	"Storage.getUsageAndQuota":                        {note: "names an origin of the store's profile, which its tasks share; opens nothing"},
	"Storage.clearDataForOrigin":                      {note: "one origin's data, as that site's own logout clears it"},
	"Storage.trackIndexedDBForOrigin":                 {note: "names an origin; opens nothing"},
	"Storage.untrackIndexedDBForOrigin":               {note: "names an origin; opens nothing"},
	"Storage.trackCacheStorageForOrigin":              {note: "names an origin; opens nothing"},
	"Storage.untrackCacheStorageForOrigin":            {note: "names an origin; opens nothing"},
	"Storage.overrideQuotaForOrigin":                  {note: "an origin's quota in the store's profile"},
}

// lookupRoute is the table's decision for method.
func lookupRoute(method string) (route, bool) {
	if r, ok := methodRoutes[method]; ok {
		return r, true
	}
	domain, _, ok := strings.Cut(method, ".")
	if !ok {
		return route{}, false
	}
	r, ok := domainRoutes[domain]
	return r, ok
}

// refusedMessage is the CDP error message of a refused call; detail names what it carried, if anything.
func refusedMessage(method, detail, reason string) string {
	if detail != "" {
		return method + " is refused by the mux: " + detail + ": " + reason
	}
	return method + " is refused by the mux: " + reason
}

// MethodTable is the table of methods as the README's security section prints it: one row per domain
// default and per method decided apart from it.
func MethodTable() string {
	var b strings.Builder
	b.WriteString("| method | where | decision |\n|---|---|---|\n")
	row := func(name string, r route) {
		w := "the client's own sessions"
		if r.where == onAny {
			w = "any session"
		}
		var d string
		switch {
		case r.refuse != "":
			d = "refused: " + r.refuse
		case r.check != nil:
			d = "judged, then re-encoded"
			if r.reason != "" {
				d += ": " + r.reason
			}
		case r.note != "":
			d = "forwarded as it came: " + r.note
		default:
			d = "forwarded as it came"
		}
		b.WriteString("| `" + name + "` | " + w + " | " + strings.ReplaceAll(d, "|", "\\|") + " |\n")
	}
	domains := make([]string, 0, len(domainRoutes))
	for d := range domainRoutes {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	for _, d := range domains {
		row(d+".*", domainRoutes[d])
	}
	methods := make([]string, 0, len(methodRoutes))
	for mth := range methodRoutes {
		methods = append(methods, mth)
	}
	sort.Strings(methods)
	for _, mth := range methods {
		row(mth, methodRoutes[mth])
	}
	b.WriteString("| anything else | — | refused: " + unknownRule + " |\n")
	return b.String()
}
