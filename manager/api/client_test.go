package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// serve runs h on a real unix socket and returns a client of it.
func serve(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "m.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return NewClient(sock)
}

func TestClientAnswers(t *testing.T) {
	big := strings.Repeat("x", 100_000) // over net/http's buffer: sent chunked
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			var body strings.Builder
			fmt.Fprintf(&body, `{"method":%q,"type":%q,"len":%d}`, r.Method, r.Header.Get("Content-Type"), r.ContentLength)
			w.Write([]byte(body.String()))
		case "/big":
			fmt.Fprintf(w, `{"value":%q}`, big)
		case "/refuse":
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"error":"slug \"x\" is taken","code":"conflict"}`))
		case "/plain":
			http.Error(w, "plain failure", http.StatusBadGateway)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		}
	})
	ctx := context.Background()
	var echo struct {
		Method, Type string
		Len          int
	}
	if err := c.Do(ctx, MethodPut, "/echo", map[string]int{"a": 1}, &echo); err != nil || echo.Method != "PUT" ||
		echo.Type != "application/json" || echo.Len != len(`{"a":1}`) {
		t.Errorf("PUT with a body: %+v, %v", echo, err)
	}
	long := "/echo?q=" + strings.Repeat("x", headRoom) // a head longer than the room kept for it before the body
	if err := c.Do(ctx, MethodPost, long, map[string]int{"a": 1}, &echo); err != nil || echo.Method != "POST" ||
		echo.Len != len(`{"a":1}`) {
		t.Errorf("POST with a long path: %+v, %v", echo, err)
	}
	var got struct{ Value string }
	if err := c.Do(ctx, MethodGet, "/big", nil, &got); err != nil || got.Value != big {
		t.Errorf("chunked answer: %d bytes, %v; want %d", len(got.Value), err, len(big))
	}
	var apiErr *Error
	if err := c.Do(ctx, MethodPost, "/refuse", nil, nil); !errors.As(err, &apiErr) || apiErr.Status != 409 ||
		!IsCode(err, CodeConflict) || apiErr.Message != `slug "x" is taken` {
		t.Errorf("409 answer: %v", err)
	}
	if err := c.Do(ctx, MethodGet, "/plain", nil, nil); !errors.As(err, &apiErr) || apiErr.Status != 502 ||
		apiErr.Message != "plain failure" {
		t.Errorf("non-JSON error: %v", err)
	}
	if err := c.Do(ctx, MethodDelete, "/empty", nil, &got); err != nil {
		t.Errorf("204 answer: %v", err)
	}
}

func TestClientUnreachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	err := NewClient(sock).Do(context.Background(), MethodGet, PathHealth, nil, nil)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "is the manager running? ("+sock+")") {
		t.Errorf("dial of a missing socket = %v; want ErrUnreachable naming the socket", err)
	}
}

func TestClientBoundedByContext(t *testing.T) {
	release := make(chan struct{})
	c := serve(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	t.Cleanup(func() { close(release) })
	for name, mk := range map[string]func() (context.Context, context.CancelFunc){
		"deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 200*time.Millisecond)
		},
		"cancel": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := mk()
			defer cancel()
			began := time.Now()
			err := c.Do(ctx, MethodGet, "/hang", nil, nil)
			if err == nil || time.Since(began) > 5*time.Second {
				t.Errorf("call to a hung manager = %v after %v; want an error at the context's end", err, time.Since(began))
			}
		})
	}
}

func TestPathSegment(t *testing.T) {
	tests := map[string]string{
		"acme-shop":       "acme-shop",
		"Acme Shop":       "Acme%20Shop",
		"a/b?c#d%e":       "a%2Fb%3Fc%23d%25e",
		"店铺":              "%E5%BA%97%E9%93%BA",
		"a1b2c3d4-x_y.z~": "a1b2c3d4-x_y.z~",
	}
	for in, want := range tests {
		if got := pathSegment(in); got != want {
			t.Errorf("pathSegment(%q) = %q; want %q", in, got, want)
		}
	}
}

func FuzzPathSegment(f *testing.F) {
	for _, s := range []string{"acme", "a/b", "店铺 #1", "%zz", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := pathSegment(s)
		if strings.ContainsAny(got, "/?# ") {
			t.Fatalf("pathSegment(%q) = %q keeps a delimiter", s, got)
		}
		back, err := url.PathUnescape(got)
		if err != nil || back != s {
			t.Fatalf("pathSegment(%q) = %q unescapes to %q, %v", s, got, back, err)
		}
	})
}

func TestIsCode(t *testing.T) {
	refused := &Error{Status: 409, Message: "taken", Code: CodeConflict}
	tests := []struct {
		name string
		err  error
		code string
		want bool
	}{
		{"the code", refused, CodeConflict, true},
		{"wrapped", fmt.Errorf("create store: %w", refused), CodeConflict, true},
		{"another code", refused, CodeNotFound, false},
		{"no code", &Error{Status: 502, Message: "plain failure"}, CodeConflict, false},
		{"not an answer", fmt.Errorf("is the manager running? (x): %w", ErrUnreachable), CodeUnavailable, false},
		{"nil", nil, CodeConflict, false},
	}
	for _, tt := range tests {
		if got := IsCode(tt.err, tt.code); got != tt.want {
			t.Errorf("IsCode(%v, %q) = %v; want %v", tt.err, tt.code, got, tt.want)
		}
	}
}

func TestListDownloadsQuery(t *testing.T) {
	var got []url.Values
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != PathDownloads {
			http.NotFound(w, r)
			return
		}
		got = append(got, r.URL.Query())
		w.Write([]byte(`[{"name":"r.csv","size":3}]`))
	})
	ctx := context.Background()
	tests := []struct {
		task, store string
		want        url.Values
	}{
		{"", "", url.Values{}},
		{"a1b2c3d4", "", url.Values{"task": {"a1b2c3d4"}}},
		{"", "Acme Shop & Co", url.Values{"store": {"Acme Shop & Co"}}},
		{"a1b2c3d4", "web", url.Values{"task": {"a1b2c3d4"}, "store": {"web"}}},
	}
	for _, tt := range tests {
		got = nil
		ds, err := c.ListDownloads(ctx, tt.task, tt.store)
		if err != nil || len(ds) != 1 || ds[0].Name != "r.csv" || ds[0].Size != 3 {
			t.Fatalf("ListDownloads(%q, %q) = %+v, %v", tt.task, tt.store, ds, err)
		}
		if len(got) != 1 || got[0].Encode() != tt.want.Encode() {
			t.Errorf("ListDownloads(%q, %q) asked %v; want %v", tt.task, tt.store, got, tt.want)
		}
	}
}

// TestShimCallsOverTheWire: ensure and the call report, written and read by hand, reach a net/http server
// that decodes them with encoding/json, and ensure's answer comes back whole.
func TestShimCallsOverTheWire(t *testing.T) {
	start := time.Date(2026, 12, 5, 1, 2, 3, 4, time.FixedZone("here", 3600))
	sent := CallReport{Client: "a1b2c3d4", Session: "acme-a1b2c3d4", Args: []string{"-c", "<x>"}, Start: start,
		End: start.Add(time.Second), Outcome: CallOK, Stdout: "ok \xff\n", Untold: []string{"stdin"}}
	var gotReq EnsureRequest
	var gotRep CallReport
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case PathSessionEnsure:
			if err := json.NewDecoder(r.Body).Decode(&gotReq); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Write([]byte(`{"cdp_ws":"ws://127.0.0.1:1/c/x/client-a","download_dir":"/d","lease_s":30,"timeline":"full","new":[1]}`))
		case taskPath(PathTaskCalls, "a1b2c3d4"):
			if err := json.NewDecoder(r.Body).Decode(&gotRep); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Write([]byte(`{}`))
		}
	})
	ctx := context.Background()
	req := EnsureRequest{Kind: KindStore, StoreID: "0d1c", ClientID: "a1b2c3d4", BUName: "acme-a1b2c3d4", TaskID: "a1b2c3d4"}
	resp, err := c.EnsureSession(ctx, req)
	want := EnsureResponse{CDPWS: "ws://127.0.0.1:1/c/x/client-a", DownloadDir: "/d", LeaseS: 30, Timeline: TimelineFull}
	if err != nil || resp != want || gotReq != req {
		t.Errorf("EnsureSession(%+v) = %+v, %v (the manager read %+v); want %+v", req, resp, err, gotReq, want)
	}
	if err := c.ReportCall(ctx, "a1b2c3d4", sent); err != nil {
		t.Fatalf("ReportCall() = %v", err)
	}
	sent.Stdout = "ok \uFFFD\n" // encoding/json's repair of invalid UTF-8, as json.Marshal would have sent it
	if !gotRep.Start.Equal(sent.Start) || !gotRep.End.Equal(sent.End) {
		t.Errorf("the manager read start %v, end %v; want %v, %v", gotRep.Start, gotRep.End, sent.Start, sent.End)
	}
	gotRep.Start, gotRep.End, sent.Start, sent.End = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(gotRep, sent) {
		t.Errorf("the manager read %+v; want %+v", gotRep, sent)
	}
}
