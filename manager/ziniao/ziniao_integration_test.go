//go:build integration

package ziniao

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"vibebrowser/integration/fakeziniao"
	"vibebrowser/integration/testkit"
)

var testAccount = Account{Company: "acme", Username: "ops", Password: "s3cret"}

// newFakeZiniao runs a fake Ziniao client with two browsers of one account: 1001 (oauth oa-1001) and 1002.
func newFakeZiniao(t *testing.T) (*fakeziniao.Server, *Client) {
	t.Helper()
	srv, err := fakeziniao.New(fakeziniao.Options{
		Company:  testAccount.Company,
		Username: testAccount.Username,
		Password: testAccount.Password,
		Browsers: []fakeziniao.Browser{
			{ID: "1001", Oauth: "oa-1001", Name: "store one"},
			{ID: "1002", Oauth: "oa-1002", Name: "store two"},
		},
		Chrome: os.Getenv("VIBE_CHROME"),
		Dir:    t.TempDir(),
	})
	if err != nil {
		t.Fatalf("fakeziniao.New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("fake Close: %v", err)
		}
	})
	return srv, &Client{Port: srv.Port(), Account: testAccount}
}

func setFault(t *testing.T, srv *fakeziniao.Server, browser string, f fakeziniao.Fault) {
	t.Helper()
	if err := srv.SetFault(browser, f); err != nil {
		t.Fatal(err)
	}
}

// startReady starts browser and stops it at cleanup.
func startReady(t *testing.T, c *Client, browser string) *Runner {
	t.Helper()
	r, err := Start(context.Background(), c, browser, StartOptions{ReadyTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Start(%s): %v", browser, err)
	}
	t.Cleanup(func() { r.Stop(context.Background()) })
	return r
}

// portDead reports whether nothing accepts connections on port.
func portDead(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func wantCalls(t *testing.T, srv *fakeziniao.Server, browser string, want fakeziniao.Calls) {
	t.Helper()
	if got := srv.Calls(browser); got != want {
		t.Errorf("Calls(%s) = %+v; want %+v", browser, got, want)
	}
}

func TestIntegrationStartStop(t *testing.T) {
	srv, c := newFakeZiniao(t)
	if err := c.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	list, err := c.BrowserList(context.Background())
	if err != nil || len(list) != 2 || list[0].ID != "1001" || list[0].Oauth != "oa-1001" {
		t.Fatalf("BrowserList() = %+v, %v; want 1001/oa-1001 and 1002", list, err)
	}
	for _, browser := range []string{"1001", "oa-1002"} { // browserId and browserOauth
		t.Run(browser, func(t *testing.T) {
			r := startReady(t, c, browser)
			port := r.DebuggingPort()
			if port != srv.DebuggingPort(browser) {
				t.Errorf("DebuggingPort() = %d; the fake's session is on %d", port, srv.DebuggingPort(browser))
			}
			if err := cdpAnswers(context.Background(), "127.0.0.1", port); err != nil {
				t.Fatalf("ready runner's port does not answer: %v", err)
			}
			if err := r.Stop(context.Background()); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if !closed(r.Done()) {
				t.Error("Done not closed after Stop")
			}
			if !portDead(port) {
				t.Errorf("port %d still accepts connections after Stop", port)
			}
			wantCalls(t, srv, browser, fakeziniao.Calls{Start: 1, Stop: 1})
		})
	}
}

func TestIntegrationStaleLaunchOnce(t *testing.T) {
	srv, c := newFakeZiniao(t)
	setFault(t, srv, "1001", fakeziniao.Fault{StaleLaunches: 1})
	r, err := Start(context.Background(), c, "1001", StartOptions{Attempts: 4, ReadyTimeout: 3 * time.Second})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { r.Stop(context.Background()) })
	wantCalls(t, srv, "1001", fakeziniao.Calls{Start: 2, Stop: 1})
	if err := cdpAnswers(context.Background(), "127.0.0.1", r.DebuggingPort()); err != nil {
		t.Errorf("second attempt's port does not answer: %v", err)
	}
}

func TestIntegrationNoInstrumentation(t *testing.T) {
	srv, c := newFakeZiniao(t)
	setFault(t, srv, "1001", fakeziniao.Fault{NoInstrumentation: -1})
	// Long enough for a probe to answer on a loaded machine, so the last reason is the unmasked webdriver.
	_, err := Start(context.Background(), c, "1001", StartOptions{Attempts: 2, ReadyTimeout: 10 * time.Second})
	var se *StartError
	if !errors.As(err, &se) || se.Attempts != 2 || se.Browser != "1001" || !errors.Is(err, ErrStaleLaunch) || !errors.Is(err, errWebDriverUnmasked) {
		t.Fatalf("Start() = %v; want a stale-launch *StartError for 1001 after 2 attempts, webdriver unmasked", err)
	}
	wantCalls(t, srv, "1001", fakeziniao.Calls{Start: 2, Stop: 2})
	if p := srv.DebuggingPort("1001"); p != 0 {
		t.Errorf("a session is left open on port %d after the failed start", p)
	}
}

func TestIntegrationNoInstrumentationOnceThenOK(t *testing.T) {
	srv, c := newFakeZiniao(t)
	setFault(t, srv, "oa-1002", fakeziniao.Fault{NoInstrumentation: 1})
	r, err := Start(context.Background(), c, "oa-1002", StartOptions{Attempts: 4, ReadyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { r.Stop(context.Background()) })
	wantCalls(t, srv, "oa-1002", fakeziniao.Calls{Start: 2, Stop: 1})
}

func TestIntegrationAPIErrors(t *testing.T) {
	srv, c := newFakeZiniao(t)
	setFault(t, srv, "1001", fakeziniao.Fault{StatusCode: fakeziniao.StatusWebDriverNotEnabled})
	_, err := Start(context.Background(), c, "1001", StartOptions{})
	if !errors.Is(err, ErrWebDriverNotEnabled) {
		t.Fatalf("Start() = %v; want ErrWebDriverNotEnabled", err)
	}
	wantCalls(t, srv, "1001", fakeziniao.Calls{Start: 1})

	wrong := &Client{Port: srv.Port(), Account: Account{Company: "acme", Username: "ops", Password: "wrong"}}
	var apiErr *APIError
	if err := wrong.Ping(context.Background()); !errors.As(err, &apiErr) || apiErr.StatusCode != fakeziniao.StatusLoginFailed {
		t.Errorf("Ping with a wrong password = %v; want statusCode %s", err, fakeziniao.StatusLoginFailed)
	}
}

func TestIntegrationSlowAnswer(t *testing.T) {
	srv, c := newFakeZiniao(t)
	// Longer than ctx, shorter than the teardown's bound: the teardown stopBrowser gets its answer.
	setFault(t, srv, "1001", fakeziniao.Fault{Delay: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Start(ctx, c, "1001", StartOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start() = %v; want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Start() took %s; want it bounded by ctx and the teardown bound", d)
	}
	wantCalls(t, srv, "1001", fakeziniao.Calls{Start: 1, Stop: 1})
	// The other store is unaffected.
	startReady(t, c, "1002")
}

func TestIntegrationConcurrentStores(t *testing.T) {
	_, c := newFakeZiniao(t)
	browsers := []string{"1001", "1002"}
	runners := make([]*Runner, len(browsers))
	errs := make([]error, len(browsers))
	var wg sync.WaitGroup
	for i, b := range browsers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runners[i], errs[i] = Start(context.Background(), c, b, StartOptions{ReadyTimeout: 30 * time.Second})
		}()
	}
	wg.Wait()
	for i, b := range browsers {
		if errs[i] != nil {
			t.Fatalf("Start(%s): %v", b, errs[i])
		}
		r := runners[i]
		t.Cleanup(func() { r.Stop(context.Background()) })
	}
	if runners[0].DebuggingPort() == runners[1].DebuggingPort() {
		t.Fatalf("both stores on port %d", runners[0].DebuggingPort())
	}
	for i, r := range runners {
		if err := cdpAnswers(context.Background(), "127.0.0.1", r.DebuggingPort()); err != nil {
			t.Errorf("store %s not answering while the other runs: %v", browsers[i], err)
		}
	}
	if err := runners[0].Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := cdpAnswers(context.Background(), "127.0.0.1", runners[1].DebuggingPort()); err != nil {
		t.Errorf("stopping store 1001 took 1002 down: %v", err)
	}
}

func TestIntegrationReplacedSessionIsDone(t *testing.T) {
	_, c := newFakeZiniao(t)
	first := startReady(t, c, "1001")
	second := startReady(t, c, "1001") // Ziniao replaces the open session: the old port dies
	testkit.WaitFor(t, 20*time.Second, "the replaced session's Done", func() bool { return closed(first.Done()) })
	if !portDead(first.DebuggingPort()) {
		t.Errorf("replaced session's port %d still accepts connections", first.DebuggingPort())
	}
	if closed(second.Done()) {
		t.Error("the new session's Done closed")
	}
}

func TestIntegrationReconnect(t *testing.T) {
	srv, c := newFakeZiniao(t)
	r, err := Start(context.Background(), c, "1001", StartOptions{ReadyTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.Release() // the manager exits, leaving the environment running
	port := r.DebuggingPort()

	a, err := Reconnect(context.Background(), c, "1001", port, testkit.Log(t))
	if err != nil {
		t.Fatalf("Reconnect(%d): %v", port, err)
	}
	if !a.Adopted() || a.Endpoint() != r.Endpoint() {
		t.Errorf("Reconnect = adopted %v at %s; want adopted at %s", a.Adopted(), a.Endpoint(), r.Endpoint())
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatalf("Stop of the adopted environment: %v", err)
	}
	if !portDead(port) {
		t.Errorf("port %d alive after Stop", port)
	}
	wantCalls(t, srv, "1001", fakeziniao.Calls{Start: 1, Stop: 1})
	if _, err := Reconnect(context.Background(), c, "1001", port, testkit.Log(t)); err == nil {
		t.Error("Reconnect to a stopped environment succeeded")
	}
}

func TestIntegrationFakeExit(t *testing.T) {
	_, c := newFakeZiniao(t)
	r := startReady(t, c, "1001")
	// The package never sends exit (the shared client is not its to stop); speak it raw.
	if err := c.call(context.Background(), "exit", nil, nil); err != nil {
		t.Fatalf("exit: %v", err)
	}
	testkit.WaitFor(t, 20*time.Second, "the client to stop answering", func() bool { return c.Ping(context.Background()) != nil })
	testkit.WaitFor(t, 20*time.Second, "the environment's Done", func() bool { return closed(r.Done()) })
	if !portDead(r.DebuggingPort()) {
		t.Errorf("port %d alive after exit", r.DebuggingPort())
	}
}
