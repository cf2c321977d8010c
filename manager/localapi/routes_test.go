package localapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"vibebrowser/manager/api"
)

// Every route names who may call it and one handler, and no method and pattern appear twice.
func TestRoutesNameWhoMayCallThem(t *testing.T) {
	seen := map[string]bool{}
	for _, rt := range routes {
		name := rt.method + " " + rt.pattern
		switch rt.who {
		case Owner, Task, Any:
		default:
			t.Errorf("route %s: who = %v; want owner, task or any", name, rt.who)
		}
		if (rt.call == nil) == (rt.raw == nil) {
			t.Errorf("route %s: want exactly one of call and raw", name)
		}
		if seen[name] {
			t.Errorf("route %s appears twice", name)
		}
		seen[name] = true
	}
	if len(seen) < 30 {
		t.Fatalf("the route table has %d routes; want the whole local API", len(seen))
	}
	(&Handler{}).mux() // every pattern registers: none conflicts with another
}

// On the agents' socket, a route for the owner only, and a path that is no route, are refused before any
// token is read, naming the owner's socket.
func TestAgentsSocketRefusesTheOwnersRoutes(t *testing.T) {
	h := &Handler{}
	for _, rt := range routes {
		if rt.who != Owner {
			continue
		}
		path := strings.NewReplacer("{ref}", "acme", "{id}", "t1", "{action}", "start", "{seq}", "1").Replace(rt.pattern)
		for _, p := range []string{path, "/v1/nosuch"} {
			r := httptest.NewRequest(rt.method, p, nil)
			r = r.WithContext(agentContext(r.Context(), nil))
			w := httptest.NewRecorder()
			h.mux().ServeHTTP(w, r)
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), api.SocketRel) {
				t.Errorf("%s %s on the agents' socket = %d %s; want 403 naming %s", rt.method, p, w.Code, w.Body, api.SocketRel)
			}
		}
	}
}
