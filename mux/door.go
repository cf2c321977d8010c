package mux

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gorilla/websocket"

	"vibebrowser/mux/clientid"
	"vibebrowser/mux/sys/sockowner"
)

// Door is the access rule and the discovery answers of one mux endpoint, with or without a running mux
// behind it: the manager keeps a store's port answering while its browser sleeps, and decides what a
// request asks for before it wakes anything.
type Door struct {
	// Token is the store token, required as the first path segment of every request.
	Token string
	// Port is the endpoint's port; the Host header must be 127.0.0.1:Port or localhost:Port.
	Port int
	// TokenUIDs, when not nil, are the only uids whose connections the store-token URLs serve (SPEC §20:
	// the manager's own and root), the peer's uid read from the kernel's socket table (sockowner); a
	// capability URL stays open to any local uid that holds it. nil serves every uid (a mux of its own).
	TokenUIDs []int
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
// token or capability: 401; an Origin header, a foreign Host or the store token from a uid not in
// TokenUIDs: 403; a bad client id, a plain HTTP request for no known path) is answered here, before any
// upgrade, and ok is false.
//
// A request that came from another host's door (FromAnotherHost; SPEC §19) is served on a capability URL only:
// the store token's URLs serve local users the manager knows, and the peer here is another host. Its Host
// header names the endpoint on the agent's host, which checked it before it relayed the request.
func (d Door) Route(w http.ResponseWriter, r *http.Request) (rt Route, ok bool) {
	rest, capPath, capID, refusal := d.authorize(r.URL.Path)
	if refusal != "" {
		http.Error(w, refusal, http.StatusUnauthorized)
		return Route{}, false
	}
	remote := FromAnotherHost(r.Context())
	if remote && capPath == "" {
		http.Error(w, "forbidden: the store-token URLs are not served to another host; connect on a capability URL, "+
			"ws://127.0.0.1:PORT/c/<capability>/client-<id>, as vibe-browser endpoint --store STORE prints it for a task",
			http.StatusForbidden)
		return Route{}, false
	}
	if r.Header.Get("Origin") != "" || !remote && !d.hostOK(r.Host) {
		// Web pages (Origin) and DNS rebinding (foreign Host) must never reach a logged-in browser.
		http.Error(w, "forbidden", http.StatusForbidden)
		return Route{}, false
	}
	if capPath == "" {
		if refusal := d.tokenPeer(r); refusal != "" {
			http.Error(w, refusal, http.StatusForbidden)
			return Route{}, false
		}
	}
	switch rest {
	case "/json/version", "/json/version/":
		return Route{Kind: RouteVersion, CapabilityPath: capPath}, true
	case "/json", "/json/", "/json/list", "/json/list/":
		return Route{Kind: RouteList, CapabilityPath: capPath}, true
	}
	if !websocket.IsWebSocketUpgrade(r) || capPath != "" && rest != "" {
		http.NotFound(w, r)
		return Route{}, false
	}
	id := capID
	if capPath == "" {
		after, named := strings.CutPrefix(rest, "/client-")
		if !named {
			return Route{Kind: RouteClient}, true
		}
		if !clientid.Valid(after) {
			http.Error(w, "client id must match "+clientid.Form, http.StatusBadRequest)
			return Route{}, false
		}
		id = after
	}
	if id == HumanClient {
		http.Error(w, "client id \""+HumanClient+"\" is reserved for people using the vibe-browser UI", http.StatusForbidden)
		return Route{}, false
	}
	return Route{Kind: RouteClient, ClientID: id, CapabilityPath: capPath}, true
}

// authorize checks the path's credential, the store token as its first segment or a client's capability
// (/c/<cap>/client-<id>), and returns the path after it ("/json/version", "/client-a", "" …); for a
// capability also its own path and client id. A refusal is the 401's message.
func (d Door) authorize(path string) (rest, capPath, capID, refusal string) {
	after, isCap := strings.CutPrefix(path, "/c/")
	if !isCap {
		rest, ok := d.checkToken(path)
		if !ok {
			return "", "", "", "unauthorized"
		}
		return rest, "", "", ""
	}
	capability, tail, _ := strings.Cut(after, "/")
	client, tail, _ := strings.Cut(tail, "/")
	id, named := strings.CutPrefix(client, "client-")
	if !named || !clientid.Valid(id) ||
		subtle.ConstantTimeCompare([]byte(capability), []byte(Capability(d.Token, id))) != 1 {
		return "", "", "", "unauthorized: a capability URL is /c/<capability>/client-<id>, with the capability " +
			"the manager handed out for that client id"
	}
	if tail != "" {
		tail = "/" + tail
	}
	return tail, "/c/" + capability + "/client-" + id, id, ""
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

// tokenPeer checks that r's peer may use the store token: the refusal's message, or "".
func (d Door) tokenPeer(r *http.Request) string {
	if d.TokenUIDs == nil {
		return ""
	}
	uid, err := sockowner.OfRequest(r)
	if err == nil && (uid == sockowner.Unknown || slices.Contains(d.TokenUIDs, uid)) {
		return ""
	}
	who := "a caller whose uid cannot be read (" + fmt.Sprint(err) + ")"
	if err == nil {
		who = "uid " + strconv.Itoa(uid)
	}
	return "forbidden: the store-token URLs (cdp_ws, cdp_http) serve only the manager's own user and root, " +
		"and this connection is " + who + "'s: connect on a capability URL, ws://" + r.Host +
		"/c/<capability>/client-<id>, as vibe-browser endpoint --store STORE prints it for a task"
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

// anotherHost marks the context of a connection another host's door handed over (SPEC §19): its value is
// that host's name, as the door's mutual TLS verified it.
type anotherHost struct{}

// WithAnotherHost marks ctx, a connection's, as one that came from host's door. host is the door's verified
// peer, never a name the connection claims: the downloads and the timeline steps of the clients it serves go
// back to that host.
func WithAnotherHost(ctx context.Context, host string) context.Context {
	return context.WithValue(ctx, anotherHost{}, host)
}

// FromAnotherHost reports whether ctx is a connection's that came from another host's door.
func FromAnotherHost(ctx context.Context) bool {
	_, ok := ctx.Value(anotherHost{}).(string)
	return ok
}

// AnotherHost is the host whose door ctx's connection came from, "" for a connection of this host.
func AnotherHost(ctx context.Context) string {
	h, _ := ctx.Value(anotherHost{}).(string)
	return h
}
