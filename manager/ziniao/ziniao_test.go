package ziniao

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeClientEnv) != "" {
		os.Exit(fakeClientMain(os.Args[1:]))
	}
	// Fast polling keeps the tests quick; the logic under test is the same.
	readyPollEvery = 20 * time.Millisecond
	watchEvery = 50 * time.Millisecond
	goleak.VerifyTestMain(m)
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// wantBody compares a request body with want, after checking and removing its requestId.
func wantBody(t *testing.T, got map[string]any, want map[string]any) {
	t.Helper()
	id, _ := got["requestId"].(string)
	if !uuidRE.MatchString(id) {
		t.Errorf("requestId = %q; want a UUID", id)
	}
	got = clone(got)
	delete(got, "requestId")
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("body = %s; want %s", gj, wj)
	}
}

func clone(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func account(action string, extra map[string]any) map[string]any {
	m := map[string]any{"company": "acme", "username": "ops", "password": "s3cret", "action": action}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// startFields is every startBrowser field of SPEC §7 besides the browser, as decoded with UseNumber.
func startFields(browser map[string]any) map[string]any {
	m := map[string]any{
		"isHeadless":              json.Number("0"),
		"isWaitPluginUpdate":      json.Number("0"),
		"isWebDriverReadOnlyMode": json.Number("0"),
		"cookieTypeLoad":          json.Number("0"),
		"cookieTypeSave":          json.Number("0"),
		"runMode":                 "1",
		"isLoadUserPlugin":        false,
		"pluginIdType":            json.Number("1"),
		"privacyMode":             json.Number("0"),
		"notPromptForDownload":    json.Number("1"),
	}
	for k, v := range browser {
		m[k] = v
	}
	return account("startBrowser", m)
}

func TestRequestBodies(t *testing.T) {
	tests := []struct {
		name string
		call func(ctx context.Context, c *Client) error
		want map[string]any
	}{
		{"getBrowserList", func(ctx context.Context, c *Client) error { _, err := c.BrowserList(ctx); return err },
			account("getBrowserList", nil)},
		{"ping", func(ctx context.Context, c *Client) error { return c.Ping(ctx) },
			account("getBrowserList", nil)},
		{"startBrowser oauth", func(ctx context.Context, c *Client) error { _, err := c.StartBrowser(ctx, "oa-7f3e"); return err },
			startFields(map[string]any{"browserOauth": "oa-7f3e"})},
		{"startBrowser digits", func(ctx context.Context, c *Client) error { _, err := c.StartBrowser(ctx, "123456"); return err },
			startFields(map[string]any{"browserId": "123456"})},
		{"startBrowser mixed is oauth", func(ctx context.Context, c *Client) error { _, err := c.StartBrowser(ctx, "12a"); return err },
			startFields(map[string]any{"browserOauth": "12a"})},
		{"stopBrowser oauth", func(ctx context.Context, c *Client) error { return c.StopBrowser(ctx, "oa-7f3e") },
			account("stopBrowser", map[string]any{"browserOauth": "oa-7f3e"})},
		{"stopBrowser digits", func(ctx context.Context, c *Client) error { return c.StopBrowser(ctx, "42") },
			account("stopBrowser", map[string]any{"browserId": "42"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, func(int, map[string]any) (int, any) {
				return http.StatusOK, ok(map[string]any{"debuggingPort": 9222, "userData": "/u", "browserList": []any{}})
			})
			if err := tt.call(context.Background(), api.client()); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			wantBody(t, api.body(0), tt.want)
		})
	}
}

func TestRequestIDsDiffer(t *testing.T) {
	api := newFakeAPI(t, func(int, map[string]any) (int, any) { return http.StatusOK, ok(nil) })
	c := api.client()
	for range 2 {
		if err := c.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := api.body(0)["requestId"], api.body(1)["requestId"]; a == b {
		t.Errorf("two requests share requestId %v", a)
	}
}

func TestResponses(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		resp     string
		wantPort int
		wantData string
		wantAPI  *APIError // nil: no APIError
		wantWD   bool      // errors.Is(err, ErrWebDriverNotEnabled)
		wantErr  string    // substring of a non-API error
	}{
		{name: "string ok", resp: `{"statusCode":"0","debuggingPort":9333,"userData":"C:\\u"}`, wantPort: 9333, wantData: `C:\u`},
		{name: "number ok", resp: `{"statusCode":0,"debuggingPort":"9444"}`, wantPort: 9444},
		{name: "webdriver off string", resp: `{"statusCode":"-10003","err":"no permission"}`,
			wantAPI: &APIError{Action: "startBrowser", StatusCode: "-10003", Message: "no permission"}, wantWD: true},
		{name: "webdriver off number", resp: `{"statusCode":-10003}`,
			wantAPI: &APIError{Action: "startBrowser", StatusCode: "-10003"}, wantWD: true},
		{name: "other code", resp: `{"statusCode":"-10000","msg":"browser busy"}`,
			wantAPI: &APIError{Action: "startBrowser", StatusCode: "-10000", Message: "browser busy"}},
		{name: "zero-like string is not ok", resp: `{"statusCode":"00"}`,
			wantAPI: &APIError{Action: "startBrowser", StatusCode: "00"}},
		{name: "no statusCode", resp: `{"debuggingPort":1}`, wantErr: "without statusCode"},
		{name: "not json", resp: `<html>`, wantErr: "bad response"},
		{name: "http 404", status: http.StatusNotFound, resp: `not found`, wantErr: "HTTP 404"},
		{name: "bad port", resp: `{"statusCode":"0","debuggingPort":"x"}`, wantErr: "bad debuggingPort"},
		{name: "no port", resp: `{"statusCode":"0"}`, wantErr: "bad debuggingPort"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := tt.status
			if status == 0 {
				status = http.StatusOK
			}
			api := newFakeAPI(t, func(int, map[string]any) (int, any) { return status, tt.resp })
			st, err := api.client().StartBrowser(context.Background(), "oa")
			var apiErr *APIError
			switch {
			case tt.wantAPI != nil:
				if !errors.As(err, &apiErr) || !reflect.DeepEqual(apiErr, tt.wantAPI) {
					t.Fatalf("StartBrowser(%s) error = %#v; want %#v", tt.resp, err, tt.wantAPI)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.As(err, &apiErr) {
					t.Fatalf("StartBrowser(%s) error = %v; want a non-API error containing %q", tt.resp, err, tt.wantErr)
				}
			default:
				if err != nil {
					t.Fatalf("StartBrowser(%s): %v", tt.resp, err)
				}
				if st.DebuggingPort != tt.wantPort || st.UserData != tt.wantData {
					t.Errorf("StartBrowser(%s) = %+v; want port %d userData %q", tt.resp, st, tt.wantPort, tt.wantData)
				}
			}
			if got := errors.Is(err, ErrWebDriverNotEnabled); got != tt.wantWD {
				t.Errorf("errors.Is(%v, ErrWebDriverNotEnabled) = %v; want %v", err, got, tt.wantWD)
			}
			if tt.wantWD {
				for _, s := range []string{"WebDriver is not enabled", "Ziniao Open Platform", "https://open.ziniao.com/docSupport?docId=99"} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
			}
		})
	}
}

func TestBrowserList(t *testing.T) {
	api := newFakeAPI(t, func(int, map[string]any) (int, any) {
		return http.StatusOK, `{"statusCode":0,"browserList":[
			{"browserOauth":"oa1","browserId":1001,"browserName":"店铺 A","siteName":"amazon.com"},
			{"browserOauth":"oa2","browserId":"1002","browserName":"B"}]}`
	})
	got, err := api.client().BrowserList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ oauth, id, name string }{{"oa1", "1001", "店铺 A"}, {"oa2", "1002", "B"}}
	if len(got) != len(want) {
		t.Fatalf("BrowserList() = %d browsers; want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Oauth != w.oauth || got[i].ID != w.id || got[i].Name != w.name {
			t.Errorf("BrowserList()[%d] = %+v; want %+v", i, got[i], w)
		}
	}
	if !strings.Contains(string(got[0].Raw), `"siteName":"amazon.com"`) {
		t.Errorf("BrowserList()[0].Raw = %s; want the whole entry", got[0].Raw)
	}
}

func TestClientNotRunning(t *testing.T) {
	c := &Client{Port: deadPort(t)}
	err := c.Ping(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is the Ziniao client running") {
		t.Fatalf("Ping() = %v; want an error asking whether the client runs", err)
	}
}

func TestClientContextCancel(t *testing.T) {
	release := make(chan struct{})
	api := newFakeAPI(t, func(int, map[string]any) (int, any) {
		<-release
		return http.StatusOK, ok(nil)
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close (LIFO)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := api.client().BrowserList(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("BrowserList() = %v; want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("BrowserList() returned after %s; want promptly after ctx ended", d)
	}
}

// scripted answers startBrowser with ports[i] on its i-th call (the last port repeats), stopBrowser with
// ok, and calls onStop for each stopBrowser.
func scripted(ports []int, onStop func()) func(int, map[string]any) (int, any) {
	starts := 0
	return func(_ int, body map[string]any) (int, any) {
		switch body["action"] {
		case "startBrowser":
			p := ports[min(starts, len(ports)-1)]
			starts++
			return http.StatusOK, ok(map[string]any{"debuggingPort": p, "userData": "/u"})
		case "stopBrowser":
			if onStop != nil {
				onStop()
			}
			return http.StatusOK, ok(nil)
		}
		return http.StatusOK, ok(nil)
	}
}

func TestStart(t *testing.T) {
	tests := []struct {
		name        string
		stale       int  // startBrowser calls answered with a dead port first
		webdriver   bool // the page reports navigator.webdriver === true
		pages       int
		attempts    int
		wantActions []string
		wantErr     error // nil: ready
		wantCreated int32
	}{
		{name: "ready at once", pages: 1, attempts: 4, wantActions: []string{"startBrowser"}},
		{name: "no page creates one", pages: 0, attempts: 4, wantActions: []string{"startBrowser"}, wantCreated: 1},
		{name: "stale once then ok", stale: 1, pages: 1, attempts: 4,
			wantActions: []string{"startBrowser", "stopBrowser", "startBrowser"}},
		{name: "stale every time", stale: 99, pages: 1, attempts: 3, wantErr: ErrStaleLaunch,
			wantActions: []string{"startBrowser", "stopBrowser", "startBrowser", "stopBrowser", "startBrowser", "stopBrowser"}},
		{name: "no instrumentation", webdriver: true, pages: 1, attempts: 2, wantErr: ErrStaleLaunch,
			wantActions: []string{"startBrowser", "stopBrowser", "startBrowser", "stopBrowser"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cdp := newFakeCDP(t, tt.pages)
			cdp.webdriver.Store(tt.webdriver)
			var ports []int
			for range min(tt.stale, tt.attempts) {
				ports = append(ports, deadPort(t))
			}
			ports = append(ports, cdp.port())
			api := newFakeAPI(t, scripted(ports, nil))
			r, err := Start(context.Background(), api.client(), "oa-1", StartOptions{Attempts: tt.attempts, ReadyTimeout: 300 * time.Millisecond})
			if got := api.actions(); !reflect.DeepEqual(got, tt.wantActions) {
				t.Errorf("actions = %q; want %q", got, tt.wantActions)
			}
			if tt.wantErr != nil {
				var se *StartError
				if !errors.As(err, &se) || !errors.Is(err, tt.wantErr) || se.Attempts != tt.attempts || se.Browser != "oa-1" {
					t.Fatalf("Start() = %v; want a *StartError for oa-1 after %d attempts wrapping %v", err, tt.attempts, tt.wantErr)
				}
				for _, s := range []string{"oa-1", "attempt"} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("Start() error %q does not name %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Start(): %v", err)
			}
			t.Cleanup(r.Release)
			if want := "http://127.0.0.1:" + itoa(cdp.port()); r.Endpoint() != want {
				t.Errorf("Endpoint() = %q; want %q", r.Endpoint(), want)
			}
			if r.PID() != 0 || r.StartTime() != 0 || r.Adopted() || r.DebuggingPort() != cdp.port() || r.Browser() != "oa-1" {
				t.Errorf("runner = pid %d start %d adopted %v port %d browser %q; want 0 0 false %d oa-1",
					r.PID(), r.StartTime(), r.Adopted(), r.DebuggingPort(), r.Browser(), cdp.port())
			}
			if cdp.created.Load() != tt.wantCreated || cdp.wrongNew.Load() != 0 {
				t.Errorf("pages created = %d (GET /json/new %d); want %d by PUT", cdp.created.Load(), cdp.wrongNew.Load(), tt.wantCreated)
			}
		})
	}
}

func TestStartNotRetried(t *testing.T) {
	tests := []struct {
		name        string
		answer      func(int, map[string]any) (int, any)
		wantIs      error
		wantActions []string
	}{
		{"webdriver not enabled", func(int, map[string]any) (int, any) { return http.StatusOK, `{"statusCode":"-10003"}` },
			ErrWebDriverNotEnabled, []string{"startBrowser"}},
		{"other api error", func(int, map[string]any) (int, any) {
			return http.StatusOK, `{"statusCode":"-1","err":"no such browser"}`
		},
			nil, []string{"startBrowser"}},
		// The request may have reached the client: whatever it started is closed.
		{"transport error", func(_ int, b map[string]any) (int, any) {
			if b["action"] == "startBrowser" {
				return http.StatusBadGateway, "proxy error"
			}
			return http.StatusOK, ok(nil)
		}, nil, []string{"startBrowser", "stopBrowser"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.answer)
			_, err := Start(context.Background(), api.client(), "7", StartOptions{Attempts: 4, ReadyTimeout: time.Second})
			var se *StartError
			if !errors.As(err, &se) || se.Attempts != 1 || se.Browser != "7" {
				t.Fatalf("Start() = %v; want a *StartError for 7 after 1 attempt", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Start() = %v; want errors.Is %v", err, tt.wantIs)
			}
			if got := api.actions(); !reflect.DeepEqual(got, tt.wantActions) {
				t.Errorf("actions = %q; want %q", got, tt.wantActions)
			}
		})
	}
}

func TestStartContextCancel(t *testing.T) {
	t.Run("while waiting for readiness", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		port := deadPort(t)
		api := newFakeAPI(t, func(_ int, b map[string]any) (int, any) {
			if b["action"] == "startBrowser" {
				time.AfterFunc(100*time.Millisecond, cancel)
			}
			return http.StatusOK, ok(map[string]any{"debuggingPort": port})
		})
		start := time.Now()
		_, err := Start(ctx, api.client(), "oa", StartOptions{ReadyTimeout: time.Minute})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Start() = %v; want context.Canceled", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Start() returned after %s; want promptly after cancel", d)
		}
		if got, want := api.actions(), []string{"startBrowser", "stopBrowser"}; !reflect.DeepEqual(got, want) {
			t.Errorf("actions = %q; want %q (the half-started environment closed)", got, want)
		}
	})
	t.Run("during a slow startBrowser", func(t *testing.T) {
		release := make(chan struct{})
		api := newFakeAPI(t, func(_ int, b map[string]any) (int, any) {
			if b["action"] == "startBrowser" {
				<-release
			}
			return http.StatusOK, ok(nil)
		})
		t.Cleanup(func() { close(release) })
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := Start(ctx, api.client(), "oa", StartOptions{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Start() = %v; want context.DeadlineExceeded", err)
		}
		testkit.WaitFor(t, 5*time.Second, "the teardown stopBrowser", func() bool { return len(api.actions()) == 2 })
		if got, want := api.actions(), []string{"startBrowser", "stopBrowser"}; !reflect.DeepEqual(got, want) {
			t.Errorf("actions = %q; want %q", got, want)
		}
	})
}

func TestRunnerStop(t *testing.T) {
	cdp := newFakeCDP(t, 1)
	api := newFakeAPI(t, scripted([]int{cdp.port()}, func() { cdp.alive.Store(false) }))
	r, err := Start(context.Background(), api.client(), "oa", StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatalf("Stop(): %v", err)
	}
	select {
	case <-r.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop(): %v", err)
	}
	if got, want := api.actions(), []string{"startBrowser", "stopBrowser"}; !reflect.DeepEqual(got, want) {
		t.Errorf("actions = %q; want %q (a second Stop is a no-op)", got, want)
	}
}

func TestRunnerStopErrors(t *testing.T) {
	tests := []struct {
		name       string
		stopAnswer string
		killPort   bool // the environment is already gone
		wantErr    bool
	}{
		{"refused but gone", `{"statusCode":"-1","err":"not open"}`, true, false},
		{"refused and alive", `{"statusCode":"-1","err":"busy"}`, false, true},
		{"ok but port lives on", `{"statusCode":"0"}`, false, true},
	}
	saved := goneBound
	goneBound = 200 * time.Millisecond
	t.Cleanup(func() { goneBound = saved })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cdp := newFakeCDP(t, 1)
			api := newFakeAPI(t, func(_ int, b map[string]any) (int, any) {
				if b["action"] == "stopBrowser" {
					return http.StatusOK, tt.stopAnswer
				}
				return http.StatusOK, ok(map[string]any{"debuggingPort": cdp.port()})
			})
			r, err := Start(context.Background(), api.client(), "oa", StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.killPort {
				cdp.alive.Store(false)
			}
			err = r.Stop(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("Stop() = %v; want error %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "oa") {
				t.Errorf("Stop() error %q does not name the browser", err)
			}
			<-r.Done() // closed after Stop either way: the manager is done with it
		})
	}
}

func TestRunnerDoneWhenPortDies(t *testing.T) {
	cdp := newFakeCDP(t, 1)
	api := newFakeAPI(t, scripted([]int{cdp.port()}, nil))
	r, err := Start(context.Background(), api.client(), "oa", StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Release)
	select {
	case <-r.Done():
		t.Fatal("Done closed while the port answers")
	case <-time.After(5 * watchEvery):
	}
	cdp.alive.Store(false)
	testkit.WaitFor(t, 5*time.Second, "Done", func() bool {
		select {
		case <-r.Done():
			return true
		default:
			return false
		}
	})
}

func TestReconnect(t *testing.T) {
	live := newFakeCDP(t, 1)
	unmasked := newFakeCDP(t, 1)
	unmasked.webdriver.Store(true)
	tests := []struct {
		name    string
		port    int
		wantErr string
	}{
		{"live", live.port(), ""},
		{"instrumentation gone", unmasked.port(), "instrumentation not live"},
		{"port dead", deadPort(t), "reconnect to port"},
		{"bad port", 0, "bad debugging port"},
	}
	api := newFakeAPI(t, func(int, map[string]any) (int, any) { return http.StatusOK, ok(nil) })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Reconnect(context.Background(), api.client(), "oa", tt.port, testkit.Log(t))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "oa") {
					t.Fatalf("Reconnect(%d) = %v; want an error naming oa containing %q", tt.port, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Reconnect(%d): %v", tt.port, err)
			}
			t.Cleanup(r.Release)
			if !r.Adopted() || r.DebuggingPort() != tt.port {
				t.Errorf("Reconnect(%d) = adopted %v port %d; want adopted on %d", tt.port, r.Adopted(), r.DebuggingPort(), tt.port)
			}
		})
	}
	if got := api.actions(); len(got) != 0 {
		t.Errorf("Reconnect sent %q to the client; want nothing", got)
	}
}

func TestDefaults(t *testing.T) {
	c := &Client{}
	if got, want := c.addr(), "127.0.0.1:16851"; got != want {
		t.Errorf("Client{}.addr() = %q; want %q", got, want)
	}
	c = &Client{Host: "172.20.0.1", Port: 1234}
	if got, want := c.addr(), "172.20.0.1:1234"; got != want {
		t.Errorf("addr() = %q; want %q", got, want)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
