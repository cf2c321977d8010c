package browsers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// These tests drive the generic browser lifecycle (ensure, death, relaunch, budget, stop) through a fake
// backend, so its rules are checked without Chromium. Each fake browser is a real CDP endpoint (an httptest
// server with a WebSocket) that a real mux connects to.

// fakeCDP answers /json/version and every command on its browser WebSocket: Target.getTargets with no
// targets, anything else with an empty result. It is enough for a mux to connect and stay connected.
type fakeCDP struct {
	srv *httptest.Server
}

func newFakeCDP(t *testing.T) *fakeCDP {
	t.Helper()
	f := &fakeCDP{}
	mx := http.NewServeMux()
	mx.HandleFunc("/json/version", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"Browser":"FakeChrome/1.0","webSocketDebuggerUrl":"ws://%s/devtools/browser/fake"}`, r.Host)
	})
	mx.HandleFunc("/devtools/browser/fake", func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var msg struct {
				ID     int    `json:"id"`
				Method string `json:"method"`
			}
			if json.Unmarshal(b, &msg) != nil {
				return
			}
			result := `{}`
			if msg.Method == "Target.getTargets" {
				result = `{"targetInfos":[]}`
			}
			if ws.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"id":%d,"result":%s}`, msg.ID, result)) != nil {
				return
			}
		}
	})
	f.srv = httptest.NewServer(mx)
	t.Cleanup(f.close)
	return f
}

// close ends the browser: its connections drop, its port stops answering.
func (f *fakeCDP) close() {
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// fakeHandle is a fake browser as its backend sees it.
type fakeHandle struct {
	cdp     *fakeCDP
	done    chan struct{}
	once    sync.Once
	crash   atomic.Bool // how it died: a crash is relaunched, anything else buried
	stopped atomic.Bool
}

func (h *fakeHandle) PID() int              { return 0 }
func (h *fakeHandle) StartTime() int64      { return 0 }
func (h *fakeHandle) Endpoint() string      { return h.cdp.srv.URL }
func (h *fakeHandle) Adopted() bool         { return false }
func (h *fakeHandle) Done() <-chan struct{} { return h.done }
func (h *fakeHandle) Release()              {}
func (h *fakeHandle) Stop(context.Context) error {
	h.stopped.Store(true)
	h.die(false)
	return nil
}

// die ends the browser, as a crash or as a clean exit.
func (h *fakeHandle) die(crash bool) {
	h.once.Do(func() {
		h.crash.Store(crash)
		h.cdp.close()
		close(h.done)
	})
}

// fakeBackend launches fakeHandles and records them.
type fakeBackend struct {
	t           *testing.T
	canRelaunch bool

	mu       sync.Mutex
	launched []*fakeHandle
	failNext int              // launches to fail before the next success
	events   []api.Event      // what the fleet noted
	refuse   func(Spec) error // when set and not nil for a launch, that launch fails with it
}

var errFakeLaunch = errors.New("the fake browser refused to start")

func (b *fakeBackend) launch(ctx context.Context, sp Spec) (handle, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failNext > 0 {
		b.failNext--
		return nil, errFakeLaunch
	}
	if b.refuse != nil {
		if err := b.refuse(sp); err != nil {
			return nil, err
		}
	}
	h := &fakeHandle{cdp: newFakeCDP(b.t), done: make(chan struct{})}
	b.launched = append(b.launched, h)
	return h, nil
}

func (b *fakeBackend) adopt(context.Context, Spec, state.BrowserSession) (handle, error) {
	return nil, errNotAdoptable
}

func (b *fakeBackend) crashed(h handle) bool { return h.(*fakeHandle).crash.Load() }
func (b *fakeBackend) relaunchable() bool    { return b.canRelaunch }

// launches returns how many browsers were launched.
func (b *fakeBackend) launches() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.launched)
}

// last returns the newest launched browser.
func (b *fakeBackend) last() *fakeHandle {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.launched[len(b.launched)-1]
}

// fakeFleet is a fleet on a temp home with the daemon's default knobs (set changes them) whose chrome backend
// is fake; the events it notes are kept by the fake backend.
func fakeFleet(t *testing.T, set func(*Config)) (*Fleet, *fakeBackend) {
	t.Helper()
	home := t.TempDir()
	cfg := Config{Home: home, ProxyPortBase: testkit.FleetPortBase, StartTimeout: 180 * time.Second, RelaunchMax: 3,
		RelaunchWindow: 600 * time.Second, TabCap: 12, MuxMaxClients: 16, MuxGrace: 480 * time.Second,
		Idle: 300 * time.Second}
	if set != nil {
		set(&cfg)
	}
	db, err := state.Open(filepath.Join(home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fb := &fakeBackend{t: t, canRelaunch: true}
	f := New(ctx, cfg, db, testkit.Log(t), Hooks{Note: fb.note})
	f.backends[state.BackendChrome] = fb
	t.Cleanup(func() {
		f.Quit(false)
		cancel()
		f.wg.Wait()
		db.Close()
	})
	return f, fb
}

// fakeStore adds a chrome-backend store and returns its Spec.
func fakeStore(t *testing.T, f *Fleet, name string) Spec {
	t.Helper()
	s, err := f.db.CreateStore(context.Background(), state.Store{Name: name, Backend: state.BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := StoreSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// relaunches returns how many relaunches the budget recorded for key.
func relaunches(t *testing.T, f *Fleet, key string) int {
	t.Helper()
	n, err := f.db.Browsers().CountRelaunches(context.Background(), key, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// note records an event the fleet noted.
func (b *fakeBackend) note(_ zerolog.Level, kind, key string, ev api.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ev.Kind, ev.StoreID = kind, key
	b.events = append(b.events, ev)
}

// eventKinds lists the kinds of the events of key's browser, oldest first.
func (b *fakeBackend) eventKinds(key string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var kinds []string
	for _, ev := range b.events {
		if ev.StoreID == key {
			kinds = append(kinds, ev.Kind)
		}
	}
	return kinds
}

func TestEnsureStartsOneBrowserForConcurrentCalls(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp := fakeStore(t, f, "Shop")
	const n = 8
	got := make(chan *Instance, n)
	for range n {
		go func() {
			in, err := f.Ensure(context.Background(), sp)
			if err != nil {
				t.Error(err)
			}
			got <- in
		}()
	}
	first := <-got
	for range n - 1 {
		if in := <-got; in != first {
			t.Fatal("concurrent ensures returned different browsers; want one")
		}
	}
	if fb.launches() != 1 {
		t.Errorf("launches = %d; want 1", fb.launches())
	}
	if relaunches(t, f, sp.Key) != 0 {
		t.Errorf("a first start was charged to the relaunch budget")
	}
}

func TestCrashIsRelaunchedBehindTheSameMux(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp := fakeStore(t, f, "Shop")
	first, err := f.Ensure(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	fb.last().die(true)
	s := f.slot(sp.Key)
	testkit.WaitFor(t, 10*time.Second, "the crashed browser to be relaunched", func() bool {
		in := s.current()
		return in != nil && in != first
	})
	next := s.current()
	if fb.launches() != 2 || next.mux != first.mux || next.port != first.port {
		t.Errorf("after a crash: %d launches, same mux %v, port %d→%d; want 2 launches behind the same mux and port",
			fb.launches(), next.mux == first.mux, first.port, next.port)
	}
	if n := relaunches(t, f, sp.Key); n != 1 {
		t.Errorf("relaunches recorded = %d; want 1", n)
	}
	again, err := f.Ensure(context.Background(), sp)
	if err != nil || again != next || fb.launches() != 2 {
		t.Errorf("ensure after the relaunch = %v (same %v), %d launches; want the relaunched browser", err, again == next, fb.launches())
	}
}

func TestSpentBudgetRefusesUntilAPersonStartsIt(t *testing.T) {
	f, fb := fakeFleet(t, func(c *Config) { c.RelaunchMax = 1 })
	sp := fakeStore(t, f, "Shop")
	other := fakeStore(t, f, "Other")
	if _, err := f.Ensure(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	s := f.slot(sp.Key)
	fb.last().die(true) // relaunched: the one relaunch of the window
	testkit.WaitFor(t, 10*time.Second, "the first relaunch", func() bool { return fb.launches() == 2 && s.current() != nil })
	fb.last().die(true) // over budget: buried
	testkit.WaitFor(t, 10*time.Second, "the browser to be buried", func() bool { return s.cur.Load() == nil })
	if _, err := f.Ensure(context.Background(), sp); !errors.Is(err, errdefs.ErrBudget) ||
		!strings.Contains(err.Error(), "vibe-browser browser start "+sp.Slug) {
		t.Fatalf("ensure over budget = %v; want errdefs.ErrBudget naming `vibe-browser browser start %s`", err, sp.Slug)
	}
	if _, err := f.Ensure(context.Background(), other); err != nil {
		t.Errorf("another store's ensure = %v; want it unaffected by this store's budget", err)
	}
	_, _ = f.Ensure(context.Background(), sp) // refused again: no news
	if got := fb.eventKinds(sp.Key); !slices.Equal(got, []string{api.EventBrowserRelaunched, api.EventBudgetSpent, api.EventBrowserDied}) {
		t.Errorf("events = %v; want a relaunch, then the budget spent (once) and the death", got)
	}
	if _, err := f.Start(context.Background(), sp); err != nil {
		t.Fatalf("an explicit start = %v; want it to forgive the budget and start", err)
	}
	if s.current() == nil {
		t.Error("no browser after an explicit start")
	}
}

func TestCleanExitIsBuriedAndTheNextStartIsARelaunch(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp := fakeStore(t, f, "Shop")
	if _, err := f.Ensure(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	s := f.slot(sp.Key)
	fb.last().die(false)
	testkit.WaitFor(t, 10*time.Second, "the closed browser to be buried", func() bool { return s.cur.Load() == nil })
	if fb.launches() != 1 {
		t.Fatalf("a clean exit was relaunched (%d launches); want it buried", fb.launches())
	}
	if _, err := f.Ensure(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	if n := relaunches(t, f, sp.Key); n != 1 {
		t.Errorf("relaunches after a death and a start = %d; want 1", n)
	}
}

func TestFailedStartMakesTheNextStartARelaunch(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp := fakeStore(t, f, "Shop")
	fb.failNext = 1
	if _, err := f.Ensure(context.Background(), sp); !errors.Is(err, errdefs.ErrStartFailed) ||
		!strings.Contains(err.Error(), errFakeLaunch.Error()) {
		t.Fatalf("ensure with a failing launch = %v; want errdefs.ErrStartFailed carrying the backend's reason", err)
	}
	if _, err := f.Ensure(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	if n := relaunches(t, f, sp.Key); n != 1 {
		t.Errorf("relaunches after a failed start = %d; want 1", n)
	}
}

func TestStopResetsTheBudget(t *testing.T) {
	f, fb := fakeFleet(t, func(c *Config) { c.RelaunchMax = 1 })
	sp := fakeStore(t, f, "Shop")
	fb.failNext = 1
	_, _ = f.Ensure(context.Background(), sp)
	if _, err := f.Ensure(context.Background(), sp); err != nil { // the one relaunch of the window
		t.Fatal(err)
	}
	if err := f.Stop(context.Background(), sp.Key); err != nil {
		t.Fatal(err)
	}
	if !fb.last().stopped.Load() {
		t.Error("stop did not stop the browser")
	}
	if n := relaunches(t, f, sp.Key); n != 0 {
		t.Errorf("relaunches after an explicit stop = %d; want 0", n)
	}
	if _, err := f.Ensure(context.Background(), sp); err != nil {
		t.Errorf("ensure after a stop = %v; want a free start", err)
	}
}

func TestHungBrowserHookRelaunchesOrBuries(t *testing.T) {
	f, fb := fakeFleet(t, func(c *Config) { c.RelaunchMax = 1 })
	sp := fakeStore(t, f, "Shop")
	first, err := f.Ensure(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	s := f.slot(sp.Key)
	endpoint, err := f.relaunchHung(context.Background(), s, first.mux)
	if err != nil || endpoint != fb.last().Endpoint() || fb.launches() != 2 || !fb.launched[0].stopped.Load() {
		t.Fatalf("hook = %q, %v after %d launches; want the hung browser stopped and the new one's endpoint", endpoint, err, fb.launches())
	}
	if s.current() == nil || s.current().mux != first.mux {
		t.Fatal("the relaunched browser is not installed behind the same mux")
	}
	if _, err := f.relaunchHung(context.Background(), s, first.mux); !errors.Is(err, errdefs.ErrBudget) {
		t.Fatalf("hook over budget = %v; want errdefs.ErrBudget", err)
	}
	testkit.WaitFor(t, 10*time.Second, "the hung browser to be buried", func() bool { return s.cur.Load() == nil })
}
