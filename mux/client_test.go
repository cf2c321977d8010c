package mux

import (
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
)

func TestTakeover(t *testing.T) { forEachTransport(t, testTakeover) }

func testTakeover(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{})
	old := newClient(t, m, "dup")
	tid := old.createTarget("about:blank")
	fresh := newClient(t, m, "dup")
	testkit.WaitFor(t, 5*time.Second, "old connection closed with 4409", func() bool {
		done, code := old.closed()
		return done && code == CloseTakenOver
	})
	if !slices.Contains(fresh.targetIDs(), tid) || !fb.hasTarget(tid) {
		t.Fatal("takeover lost the client's tab")
	}
}

func TestTakeoverAllowedAtMaxClients(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{MaxClients: 1})
	old := newClient(t, m, "x")
	old.call("Browser.getVersion", "", "")
	newClient(t, m, "x") // the same id may always take its slot over
	testkit.WaitFor(t, 5*time.Second, "old closed with 4409", func() bool { d, code := old.closed(); return d && code == CloseTakenOver })
}

func TestSlowClientDoesNotStallOthers(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{QueueBytes: 256 << 10, Grace: time.Minute})
	// The slow client is a raw TCP WebSocket that never reads.
	slowWS, _, err := dialMux(t, m, "/tok/client-slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slowWS.Close() })
	slowWS.NetConn().(*net.TCPConn).SetReadBuffer(4096)
	slowWS.WriteMessage(websocket.TextMessage, []byte(`{"id":1,"method":"Target.createTarget","params":{"url":"about:blank"}}`))
	testkit.WaitFor(t, 5*time.Second, "slow client's tab", func() bool { return len(m.Ownership()["slow"]) == 2 })
	slowPage := m.Ownership()["slow"][1]
	slowWS.WriteMessage(websocket.TextMessage, []byte(`{"id":2,"method":"Target.attachToTarget","params":{"targetId":"`+slowPage+`","flatten":true}}`))
	var slowSess string
	testkit.WaitFor(t, 5*time.Second, "slow client's session", func() bool { slowSess = fb.askedSessionOf(slowPage); return slowSess != "" })

	fast := newClient(t, m, "fast")
	big := `{"method":"Network.dataReceived","params":{"data":"` + strings.Repeat("y", 64<<10) + `"},"sessionId":"` + slowSess + `"}`
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			fb.send(big)
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
	for range 20 {
		start := time.Now()
		if r := fast.call("Browser.getVersion", "", ""); r.Error != nil {
			t.Fatal(r.Error)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("fast client's call took %v while another client stalled", d)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "slow client disconnected on overflow, into its grace period", func() bool {
		for _, cs := range m.Stats().PerClient {
			if cs.ID == "slow" {
				return !cs.Connected && cs.Tabs == 1
			}
		}
		return false
	})
	if !fb.hasTarget(slowPage) {
		t.Fatal("overflow closed the slow client's tab")
	}
}

func TestKeepalive(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{PingInterval: 50 * time.Millisecond, PongTimeout: 500 * time.Millisecond, Grace: time.Minute})
	ws, _, err := dialMux(t, m, "/tok/client-live", nil)
	if err != nil {
		t.Fatal(err)
	}
	var pings atomic.Int32
	ws.SetPingHandler(func(data string) error {
		pings.Add(1)
		return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	live := &testClient{t: t, ws: ws}
	t.Cleanup(func() { ws.Close() })
	go live.read()
	live.createTarget("about:blank")
	mute, _, err := dialMux(t, m, "/tok/client-mute", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	mute.WriteMessage(websocket.TextMessage, []byte(`{"id":1,"method":"Target.createTarget","params":{"url":"about:blank"}}`))
	// mute never reads, so it never answers a ping: it is dropped into its grace period, tabs kept.
	testkit.WaitFor(t, 5*time.Second, "silent client dropped", func() bool {
		for _, cs := range m.Stats().PerClient {
			if cs.ID == "mute" {
				return !cs.Connected && cs.Tabs == 1
			}
		}
		return false
	})
	// The idle live client is pinged again and again, answers, and stays.
	testkit.WaitFor(t, 5*time.Second, "several pings answered", func() bool { return pings.Load() >= 4 })
	if done, _ := live.closed(); done {
		t.Fatal("client answering pings was dropped")
	}
	if r := live.call("Browser.getVersion", "", ""); r.Error != nil {
		t.Fatal(r.Error)
	}
}

// TestAnIdleClientsNextAnswerIsWritten: a client silent for longer than the write timeout (an agent thinking
// between two steps) gets its next answer. The upstream reader writes small answers to the socket itself,
// and a socket write past a stale deadline fails at once: the answer must re-arm the deadline, not hang up.
func TestAnIdleClientsNextAnswerIsWritten(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{WriteTimeout: 200 * time.Millisecond, PingInterval: time.Minute, PongTimeout: time.Minute})
	ws, _, err := dialMux(t, m, "/tok/client-thinker", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &testClient{t: t, ws: ws}
	t.Cleanup(func() { ws.Close() })
	go c.read()
	for i := range 3 {
		// A ping's pong goes out through the writer goroutine, which arms the write deadline.
		if err := ws.WriteControl(websocket.PingMessage, []byte("hi"), time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // past the write deadline the pong armed
		if r := c.call("Browser.getVersion", "", ""); r.Error != nil {
			t.Fatalf("call %d: %v", i, r.Error)
		}
	}
	if done, err := c.closed(); done {
		t.Fatalf("the mux hung up on a client that was only quiet: %v", err)
	}
}
