package mux

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/websocket"

	"vibebrowser/mux/clientid"
)

// Door is the access rule and the discovery answers of one mux endpoint, with or without a running mux
// behind it: the manager keeps a store's port answering while its browser sleeps, and decides what a
// request asks for before it wakes anything.
type Door struct {
	// Token is the store token, required as the first path segment of every request.
	Token string
	// Port is the endpoint's port; the Host header must be 127.0.0.1:Port or localhost:Port.
	Port int
}

// RouteKind is what an accepted request asks for.
type RouteKind int

// Route kinds.
const (
	// RouteVersion is GET /json/version (or /json/version/): the browser's version object.
	RouteVersion RouteKind = iota + 1
	// RouteList is GET /json/list (or /json): the target list, which HTTP callers never see.
	RouteList
	// RouteClient is a WebSocket upgrade: a CDP client.
	RouteClient
)

// Route is an accepted request.
type Route struct {
	Kind RouteKind
	// ClientID is a RouteClient's id from /client-<id>; empty for a discovery client (any other path),
	// which the mux names itself.
	ClientID string
	// CapabilityPath is the request's /c/<cap>/client-<id> when it came on a client's capability URL; its
	// discovery answers then point back at that URL, never at the store token's.
	CapabilityPath string
}

// Capability is client id's capability on the endpoint of the store token (SPEC §14): 128 bits of
// HMAC-SHA256(token, id), in hex. Its URL names that one client: it gives away neither the token nor any
// other client's capability.
func Capability(token, clientID string) string {
	h := hmac.New(sha256.New, []byte(token))
	h.Write([]byte(clientID))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// CapabilityPath is the path of client id's capability URL: /c/<cap>/client-<id>.
func CapabilityPath(token, clientID string) string {
	return "/c/" + Capability(token, clientID) + "/client-" + clientID
}

// Route checks r against the endpoint's rules and says what it asks for. A refused request (no or a wrong
// token: 401; an Origin header or a foreign Host: 403; a bad client id, a plain HTTP request for no known
// path) is answered here, before any upgrade, and ok is false.
func (d Door) Route(w http.ResponseWriter, r *http.Request) (rt Route, ok bool) {
	if after, isCap := strings.CutPrefix(r.URL.Path, "/c/"); isCap {
		return d.routeCapability(w, r, after)
	}
	rest, ok := d.checkToken(r.URL.Path)
	if !ok {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return Route{}, false
	}
	if r.Header.Get("Origin") != "" || !d.hostOK(r.Host) {
		// Web pages (Origin) and DNS rebinding (foreign Host) must never reach a logged-in browser.
		http.Error(w, "forbidden", http.StatusForbidden)
		return Route{}, false
	}
	switch rest {
	case "/json/version", "/json/version/":
		return Route{Kind: RouteVersion}, true
	case "/json", "/json/", "/json/list", "/json/list/":
		return Route{Kind: RouteList}, true
	}
	if !websocket.IsWebSocketUpgrade(r) {
		http.NotFound(w, r)
		return Route{}, false
	}
	after, named := strings.CutPrefix(rest, "/client-")
	if !named {
		return Route{Kind: RouteClient}, true
	}
	if !clientid.Valid(after) {
		http.Error(w, "client id must match "+clientid.Form, http.StatusBadRequest)
		return Route{}, false
	}
	if after == HumanClient {
		http.Error(w, "client id \""+HumanClient+"\" is reserved for people using the vibe-browser UI", http.StatusForbidden)
		return Route{}, false
	}
	return Route{Kind: RouteClient, ClientID: after}, true
}

// routeCapability routes a request on a capability URL (after is the path past /c/): the capability must be
// the named client's (401 otherwise, as a wrong token is), and it leads to that client, or to discovery
// answers that point back at it.
func (d Door) routeCapability(w http.ResponseWriter, r *http.Request, after string) (Route, bool) {
	capability, rest, _ := strings.Cut(after, "/")
	client, rest, _ := strings.Cut(rest, "/")
	id, named := strings.CutPrefix(client, "client-")
	if !named || !clientid.Valid(id) ||
		subtle.ConstantTimeCompare([]byte(capability), []byte(Capability(d.Token, id))) != 1 {
		http.Error(w, "unauthorized: a capability URL is /c/<capability>/client-<id>, with the capability the "+
			"manager handed out for that client id", http.StatusUnauthorized)
		return Route{}, false
	}
	if r.Header.Get("Origin") != "" || !d.hostOK(r.Host) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return Route{}, false
	}
	base := "/c/" + capability + "/client-" + id
	switch rest {
	case "json/version", "json/version/":
		return Route{Kind: RouteVersion, CapabilityPath: base}, true
	case "json", "json/", "json/list", "json/list/":
		return Route{Kind: RouteList, CapabilityPath: base}, true
	case "":
	default:
		http.NotFound(w, r)
		return Route{}, false
	}
	if !websocket.IsWebSocketUpgrade(r) {
		http.NotFound(w, r)
		return Route{}, false
	}
	if id == HumanClient {
		http.Error(w, "client id \""+HumanClient+"\" is reserved for people using the vibe-browser UI", http.StatusForbidden)
		return Route{}, false
	}
	return Route{Kind: RouteClient, ClientID: id, CapabilityPath: base}, true
}

func (d Door) checkToken(path string) (rest string, ok bool) {
	p := strings.TrimPrefix(path, "/")
	seg, rest, _ := strings.Cut(p, "/")
	if subtle.ConstantTimeCompare([]byte(seg), []byte(d.Token)) != 1 {
		return "", false
	}
	if rest != "" || strings.HasSuffix(p, "/") {
		rest = "/" + rest
	}
	return rest, true
}

func (d Door) hostOK(host string) bool {
	port := strconv.Itoa(d.Port)
	return host == "127.0.0.1:"+port || host == "localhost:"+port
}

// WriteVersion answers /json/version with v, its webSocketDebuggerUrl pointing at this endpoint instead of
// the browser: at a discovery client's path, or for a request on a capability URL at that URL again.
func (d Door) WriteVersion(w http.ResponseWriter, r *http.Request, rt Route, v map[string]any) {
	out := make(map[string]any, len(v)+1)
	for k, x := range v {
		out[k] = x
	}
	out["webSocketDebuggerUrl"] = "ws://" + r.Host + "/" + d.Token + "/devtools/browser/" + randomHex(8)
	if rt.CapabilityPath != "" {
		out["webSocketDebuggerUrl"] = "ws://" + r.Host + rt.CapabilityPath
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "   ")
	enc.Encode(out)
}

// WriteList answers /json/list: HTTP requests carry no client identity, so there is nothing a caller may
// see.
func (d Door) WriteList(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Write([]byte("[]\n"))
}
