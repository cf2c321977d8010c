package mux

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// The store-token URLs serve only the uids the door names (SPEC §20), the peer read from the kernel's
// socket table of a real loopback connection; a capability URL serves any uid that holds it.
func TestDoorTokenUIDs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the peer's uid is read from /proc/net/tcp")
	}
	const token = "0123456789abcdef0123456789abcdef"
	me, other := os.Getuid(), os.Getuid()+4242
	var door atomic.Pointer[Door] // each subtest's, read by the server's goroutines
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := door.Load().Route(w, r); ok {
			io.WriteString(w, "routed")
		}
	}))
	defer srv.Close()
	port, _ := strconv.Atoi(srv.URL[strings.LastIndex(srv.URL, ":")+1:])
	tokenURL := srv.URL + "/" + token + "/json/version"
	capURL := srv.URL + CapabilityPath(token, "task-1") + "/json/version"
	tests := []struct {
		name   string
		uids   []int
		url    string
		status int
		want   string
	}{
		{"token, no rule", nil, tokenURL, http.StatusOK, "routed"},
		{"token, this uid allowed", []int{other, me}, tokenURL, http.StatusOK, "routed"},
		{"token, another uid only", []int{other}, tokenURL, http.StatusForbidden,
			"serve only the manager's own user and root, and this connection is uid " + strconv.Itoa(me) + "'s: connect on a capability URL"},
		{"capability, another uid only", []int{other}, capURL, http.StatusOK, "routed"},
		{"a wrong token is 401 first", []int{other}, srv.URL + "/nope/json/version", http.StatusUnauthorized, "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			door.Store(&Door{Token: token, Port: port, TokenUIDs: tt.uids})
			resp, err := http.Get(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.want) {
				t.Errorf("GET %s with TokenUIDs %v = %d %q; want %d with %q", tt.url, tt.uids, resp.StatusCode, body, tt.status, tt.want)
			}
		})
	}
}

// A request another host's door handed over (SPEC §19) is served on a capability URL only, whatever its uid,
// case or encoding of the token path; its Host names the agent's host's endpoint, which checked it; an Origin
// is refused as from anyone.
func TestDoorFromAnotherHost(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	door := Door{Token: token, Port: 9401} // no TokenUIDs: a local peer would pass any token URL
	capPath := CapabilityPath(token, "task-1")
	tests := []struct {
		name, path, host, origin string
		status                   int
	}{
		{"a capability, the agent host's port", capPath + "/json/version", "127.0.0.1:9555", "", http.StatusOK},
		{"the store token", "/" + token + "/json/version", "127.0.0.1:9401", "", http.StatusForbidden},
		{"the store token, a client path", "/" + token + "/client-task-1", "127.0.0.1:9401", "", http.StatusForbidden},
		{"the store token in upper case", "/" + strings.ToUpper(token) + "/json/version", "127.0.0.1:9401", "", http.StatusUnauthorized},
		{"a capability with an Origin", capPath + "/json/version", "127.0.0.1:9555", "https://evil.example", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "http://"+tt.host+tt.path, nil)
			r = r.WithContext(WithAnotherHost(r.Context(), "host1"))
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			w := httptest.NewRecorder()
			_, ok := door.Route(w, r)
			status := w.Code
			if ok {
				status = http.StatusOK
			}
			if status != tt.status {
				t.Errorf("Route(%s, Host %s) from another host = %d (%s); want %d", tt.path, tt.host, status, w.Body.String(), tt.status)
			}
		})
	}
	// The same capability request from this host, with the foreign Host, is refused: the rule is the door's.
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9555"+capPath+"/json/version", nil)
	if _, ok := door.Route(httptest.NewRecorder(), r); ok {
		t.Error("a local request with a foreign Host was routed")
	}
}
