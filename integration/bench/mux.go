package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/ui"
	"vibebrowser/mux"
)

// SPEC §8 mux budgets, measured side by side in one run against one Chromium: direct, a plain Go relay
// (one upstream per client, no parsing: the floor of one extra hop) and the mux.
const (
	benchToken      = "benchbenchbenchbenchbenchbench00"
	bigSize         = 8 << 20
	latencyCalls    = 3000
	latencyCalls16  = 300
	bigCalls        = 30
	holDuration     = 4 * time.Second
	viewerRounds    = 3
	viewerRound     = 4 * time.Second
	routingDuration = 3 * time.Second
	idleClients     = 200
)

// benchMux measures the mux against chromium (a Chromium binary; "" runs only the browser-less rows).
func benchMux(ctx context.Context, chromium string) ([]Row, error) {
	var rows []Row
	for _, fake := range []struct {
		name  string
		start func() (string, func(), error)
	}{
		{"in-process fake browser", func() (string, func(), error) { u, stop := benchFakeBrowser(); return u, stop, nil }},
		{"in-process fake keeper (unix socket)", benchFakeKeeper},
	} {
		upstream, stop, err := fake.start()
		if err != nil {
			return nil, fmt.Errorf("routing, %s: %w", fake.name, err)
		}
		r, err := benchRouting(ctx, upstream, fake.name)
		stop()
		if err != nil {
			return nil, fmt.Errorf("routing, %s: %w", fake.name, err)
		}
		rows = append(rows, r...)
	}
	r, err := benchIdleMemory(ctx)
	if err != nil {
		return nil, fmt.Errorf("idle memory: %w", err)
	}
	rows = append(rows, r...)
	if chromium == "" {
		return append(rows, Row{Group: "mux", Name: "chromium rows skipped: no Chromium installed"}), nil
	}
	chr, err := benchLaunchChromium(chromium)
	if err != nil {
		return nil, err
	}
	defer chr.stop()
	r, err = benchAgainstChromium(ctx, chr)
	if err != nil {
		return nil, err
	}
	return append(rows, r...), nil
}

// benchModes are the ways a client reaches the browser, by name: "direct" and "relay" take the URL as it
// is, a mux's ("mux", "mux pipe") a per-client suffix.
type benchModes struct {
	names []string          // the order of a round
	urls  map[string]string // browser WebSocket URLs
	via   map[string]string // host:port to dial instead of the URL's, by mode (a relay in front of it); nil: none
}

func (b benchModes) url(mode string, client int) string {
	if strings.HasPrefix(mode, "mux") {
		return b.urls[mode] + "/client-bench" + strconv.Itoa(client)
	}
	return b.urls[mode]
}

// rounds runs kind with n clients through every mode: with one client the modes take turns call by call
// (benchAlternating), with more in interleaved rounds, so a noisy neighbour or a warming browser hurts them
// all alike. It returns each mode's latencies and wall time.
func (b benchModes) rounds(ctx context.Context, kind string, n, calls int) (map[string][]time.Duration, map[string]time.Duration, error) {
	if n == 1 {
		return benchAlternating(ctx, b, kind, calls)
	}
	const rounds = 5
	samples := map[string][]time.Duration{}
	elapsed := map[string]time.Duration{}
	for r := range rounds {
		for i := range b.names {
			mode := b.names[(r+i)%len(b.names)]
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			s, e, err := benchLatency(ctx, b, mode, kind, n, max(1, calls/rounds))
			if err != nil {
				return nil, nil, fmt.Errorf("%s %s %d clients: %w", mode, kind, n, err)
			}
			samples[mode] = append(samples[mode], s...)
			elapsed[mode] += e
		}
	}
	return samples, elapsed, nil
}

func benchAgainstChromium(ctx context.Context, chr *benchChromium) ([]Row, error) {
	m, muxURL, stopMux, err := benchStartMux(chr.http)
	if err != nil {
		return nil, err
	}
	defer stopMux()
	relayURL, stopRelay, err := benchStartRelay(chr.ws)
	if err != nil {
		return nil, err
	}
	defer stopRelay()
	modes := benchModes{names: []string{"direct", "relay", "mux"},
		urls: map[string]string{"direct": chr.ws, "relay": relayURL, "mux": muxURL}}
	var rows []Row

	type key struct {
		method  string
		clients int
		mode    string
	}
	lat := map[key][3]time.Duration{}
	thr := map[key]float64{}
	for _, method := range []string{"version", "eval"} {
		for _, n := range []int{1, 16} {
			calls := latencyCalls
			if n > 1 {
				calls = latencyCalls16
			}
			samples, elapsed, err := modes.rounds(ctx, method, n, calls)
			if err != nil {
				return nil, err
			}
			for _, mode := range []string{"direct", "relay", "mux"} {
				p50, p95, p99 := percentiles(samples[mode])
				lat[key{method, n, mode}] = [3]time.Duration{p50, p95, p99}
				thr[key{method, n, mode}] = float64(len(samples[mode])) / elapsed[mode].Seconds()
				rows = append(rows, Row{Group: "mux", Name: fmt.Sprintf("%s %dc %s", method, n, mode), P50: p50, P95: p95, P99: p99,
					Value: thr[key{method, n, mode}], Unit: "calls/s", OK: true})
			}
			d, rl, mx := lat[key{method, n, "direct"}][0], lat[key{method, n, "relay"}][0], lat[key{method, n, "mux"}][0]
			relayAdd, muxAdd := rl-d, mx-d
			ratio := float64(muxAdd) / float64(max(relayAdd, time.Microsecond))
			rows = append(rows, Row{Group: "mux", Name: fmt.Sprintf("%s %dc added p50: mux %v vs relay %v", method, n, muxAdd.Round(time.Microsecond), relayAdd.Round(time.Microsecond)),
				Value: ratio, Unit: "x relay", Budget: "<= 1.25x relay", OK: muxAdd <= relayAdd || ratio <= 1.25})
			if n == 16 {
				tr := thr[key{method, n, "mux"}] / thr[key{method, n, "relay"}]
				rows = append(rows, Row{Group: "mux", Name: fmt.Sprintf("%s 16c throughput mux/relay", method), Value: tr, Unit: "x relay", Budget: ">= 0.9x relay", OK: tr >= 0.9})
			}
		}
	}

	r, err := benchViewer(ctx, m, modes)
	if err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	rows = append(rows, r...)

	// An 8 MiB response, direct vs mux (never fully decoded by the mux).
	bigSamples, _, err := modes.rounds(ctx, "big", 1, bigCalls)
	if err != nil {
		return nil, err
	}
	big := map[string]time.Duration{}
	for _, mode := range []string{"direct", "relay", "mux"} {
		p50, p95, p99 := percentiles(bigSamples[mode])
		big[mode] = p50
		rows = append(rows, Row{Group: "mux", Name: "8MiB response " + mode, P50: p50, P95: p95, P99: p99, OK: true})
	}
	br := float64(big["mux"]) / float64(big["direct"])
	rows = append(rows, Row{Group: "mux", Name: "8MiB response mux/direct p50", Value: br, Unit: "x direct", Budget: "<= 1.05x direct", OK: br <= 1.05})

	// Head of line: one client pulls 8 MiB answers, 15 others make small calls.
	hol := map[string][2]float64{}
	for _, mode := range []string{"relay", "mux"} {
		p99, tput, err := benchHOL(ctx, modes, mode)
		if err != nil {
			return nil, fmt.Errorf("hol %s: %w", mode, err)
		}
		hol[mode] = [2]float64{float64(p99), tput}
		rows = append(rows, Row{Group: "mux", Name: "hol small calls " + mode, P99: p99, Value: tput, Unit: "calls/s", OK: true})
	}
	pr := hol["mux"][0] / hol["relay"][0]
	tr := hol["mux"][1] / hol["relay"][1]
	rows = append(rows,
		Row{Group: "mux", Name: "hol others' p99 mux/relay", Value: pr, Unit: "x relay", Budget: "<= 1.25x relay", OK: pr <= 1.25},
		Row{Group: "mux", Name: "hol others' throughput mux/relay", Value: tr, Unit: "x relay", Budget: ">= 0.9x relay", OK: tr >= 0.9})
	st := m.Stats()
	rows = append(rows, Row{Group: "mux", Name: "mux messages routed in this run", Value: float64(st.MessagesIn + st.MessagesOut), Unit: "msgs"})
	return rows, nil
}

// benchViewer is SPEC §8's "a person watching": the eval cell with 16 clients through the mux, without and
// with one live viewer on one of their tabs, which repaints every animation frame in both conditions so
// that only the viewer differs. The viewer is what the web UI opens (ui.LiveView) with a goroutine taking
// frames as the UI's WebSocket does.
func benchViewer(ctx context.Context, m *mux.Mux, modes benchModes) ([]Row, error) {
	clients := make([]*benchClient, 16)
	// The watched tab is created last, in a window of its own: Chrome hides a tab that a newer one covers
	// in its window, and a hidden tab neither runs its animation frames nor sends screencast frames.
	for _, i := range append(seq(1, len(clients)), 0) {
		c, err := benchDial(modes.url("mux", 300+i))
		if err != nil {
			return nil, err
		}
		defer c.close()
		create := map[string]any{"url": "about:blank"}
		if i == 0 {
			create["newWindow"] = true
		}
		if err := c.prepareWith(create); err != nil {
			return nil, err
		}
		for range 20 { // warm-up
			if err := c.do("eval"); err != nil {
				return nil, err
			}
		}
		clients[i] = c
	}
	// The watched tab's own client starts the animation: a page that never changes gives the screencast
	// nothing to send, and the viewer would cost nothing.
	res, err := clients[0].call("Runtime.evaluate", map[string]any{"expression": `(function paint(t) {
		document.documentElement.style.background = 'hsl(' + (t / 4 % 360) + ' 80% 50%)';
		requestAnimationFrame(paint);
	})(0); document.visibilityState`, "returnByValue": true})
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(res, []byte(`"value":"visible"`)) {
		return nil, fmt.Errorf("the watched tab is not visible, so it would not repaint: %s", res)
	}

	samples := map[bool][]time.Duration{}
	elapsed := map[bool]time.Duration{}
	var frames int
	// watch runs one round with a viewer on clients[0]'s tab and returns the frames it took during the load.
	watch := func() ([]time.Duration, time.Duration, int, error) {
		vctx, cancel := context.WithCancel(ctx)
		defer cancel()
		v, err := m.Operator().View(vctx, clients[0].target, ui.LiveView)
		if err != nil {
			return nil, 0, 0, err
		}
		defer v.Close()
		var got atomic.Int64
		first := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for n := 0; ; n++ {
				if _, err := v.Next(vctx); err != nil {
					return
				}
				if n == 0 {
					close(first)
				}
				got.Add(1)
			}
		}()
		// The load starts once frames flow, so the round measures a viewer that is watching, not one
		// still attaching.
		select {
		case <-first:
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return nil, 0, 0, ctx.Err()
		}
		before := got.Load()
		s, e, err := benchLoad(ctx, clients, "eval", 0, time.Now().Add(viewerRound))
		n := int(got.Load() - before)
		cancel()
		<-done
		return s, e, n, err
	}
	// Rounds of a few seconds, taking turns and swapping which goes first, compared in total: on 2 shared
	// cores a neighbour's burst or the browser's own drift over one long stretch each would decide the
	// answer more than a 10% viewer would; in turns it falls on both conditions alike.
	for r := range viewerRounds {
		for i := range 2 {
			with := (r+i)%2 == 1
			var s []time.Duration
			var e time.Duration
			var err error
			if with {
				var n int
				s, e, n, err = watch()
				frames += n
			} else {
				s, e, err = benchLoad(ctx, clients, "eval", 0, time.Now().Add(viewerRound))
			}
			if err != nil {
				return nil, fmt.Errorf("round %d (viewer %v): %w", r, with, err)
			}
			samples[with] = append(samples[with], s...)
			elapsed[with] += e
		}
	}

	var rows []Row
	tput := map[bool]float64{}
	p99 := map[bool]time.Duration{}
	for _, with := range []bool{false, true} {
		p50, p95, p := percentiles(samples[with])
		tput[with], p99[with] = float64(len(samples[with]))/elapsed[with].Seconds(), p
		name := "eval 16c mux, no viewer"
		if with {
			name = "eval 16c mux, one viewer"
		}
		rows = append(rows, Row{Group: "mux", Name: name, P50: p50, P95: p95, P99: p, Value: tput[with], Unit: "calls/s", OK: true})
	}
	tr := tput[true] / tput[false]
	pr := float64(p99[true]) / float64(p99[false])
	return append(rows,
		Row{Group: "mux", Name: "eval 16c mux throughput one viewer/none", Value: tr, Unit: "x none", Budget: ">= 0.9x none", OK: tr >= 0.9},
		Row{Group: "mux", Name: "eval 16c mux p99 one viewer/none", Value: pr, Unit: "x none", Budget: "<= 1.25x none", OK: pr <= 1.25},
		Row{Group: "mux", Name: fmt.Sprintf("viewer frames received in %v (MaxFPS %d)", viewerRounds*viewerRound, ui.LiveView.MaxFPS), Value: float64(frames), Unit: "frames"}), nil
}

// seq returns from, from+1, …, to-1.
func seq(from, to int) []int {
	s := make([]int, 0, max(0, to-from))
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// benchClient is a synchronous CDP client: one call at a time, events skipped.
type benchClient struct {
	ws      *websocket.Conn
	id      int
	target  string
	session string
}

func benchDial(url string) (*benchClient, error) {
	return benchDialVia(url, "")
}

// benchDialVia is benchDial connecting to addr (host:port) instead of the URL's host, the URL's Host header
// kept; addr "" is the URL's.
func benchDialVia(url, addr string) (*benchClient, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	if addr != "" {
		d.NetDialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
	}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(-1)
	return &benchClient{ws: ws}, nil
}

func (c *benchClient) call(method string, params any) (json.RawMessage, error) {
	c.id++
	msg := map[string]any{"id": c.id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if c.session != "" && !strings.HasPrefix(method, "Target.") && !strings.HasPrefix(method, "Browser.") {
		msg["sessionId"] = c.session
	}
	b, _ := json.Marshal(msg)
	if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		return nil, err
	}
	want := []byte(`{"id":` + strconv.Itoa(c.id) + `,`)
	for {
		_, r, err := c.ws.NextReader()
		if err != nil {
			return nil, err
		}
		head := make([]byte, len(want))
		n, _ := io.ReadFull(r, head)
		if n == len(want) && bytes.Equal(head, want) {
			rest, err := io.ReadAll(r)
			if err != nil {
				return nil, err
			}
			if bytes.HasPrefix(rest, []byte(`"error"`)) {
				return nil, fmt.Errorf("%s: %s", method, rest)
			}
			return rest, nil
		}
		io.Copy(io.Discard, r)
	}
}

// prepare gives the client a page session for eval/big calls.
func (c *benchClient) prepare() error {
	return c.prepareWith(map[string]any{"url": "about:blank"})
}

// prepareWith is prepare with the given Target.createTarget parameters.
func (c *benchClient) prepareWith(create map[string]any) error {
	res, err := c.call("Target.createTarget", create)
	if err != nil {
		return err
	}
	var ct struct {
		Result struct{ TargetID string } `json:"result"`
	}
	json.Unmarshal(append([]byte("{"), res...), &ct)
	c.target = ct.Result.TargetID
	res, err = c.call("Target.attachToTarget", map[string]any{"targetId": ct.Result.TargetID, "flatten": true})
	if err != nil {
		return err
	}
	var at struct {
		Result struct{ SessionID string } `json:"result"`
	}
	json.Unmarshal(append([]byte("{"), res...), &at)
	c.session = at.Result.SessionID
	return nil
}

func (c *benchClient) do(kind string) error {
	var err error
	switch kind {
	case "version":
		_, err = c.call("Browser.getVersion", nil)
	case "eval":
		_, err = c.call("Runtime.evaluate", map[string]any{"expression": "1+1", "returnByValue": true})
	case "big":
		var res json.RawMessage
		res, err = c.call("Runtime.evaluate", map[string]any{"expression": "'x'.repeat(" + strconv.Itoa(bigSize) + ")", "returnByValue": true})
		if err == nil && len(res) < bigSize {
			err = fmt.Errorf("big answer of %d bytes", len(res))
		}
	}
	return err
}

func (c *benchClient) close() {
	if c.target != "" {
		c.call("Target.closeTarget", map[string]any{"targetId": c.target})
	}
	c.ws.Close()
}

// benchLatency runs n clients making calls each; it returns every latency and the wall time.
func benchLatency(ctx context.Context, modes benchModes, mode, kind string, n, calls int) ([]time.Duration, time.Duration, error) {
	clients := make([]*benchClient, n)
	for i := range clients {
		c, err := benchDial(modes.url(mode, i))
		if err != nil {
			return nil, 0, err
		}
		defer c.close()
		if kind != "version" {
			if err := c.prepare(); err != nil {
				return nil, 0, err
			}
		}
		for range min(20, calls) { // warm-up
			if err := c.do(kind); err != nil {
				return nil, 0, err
			}
		}
		clients[i] = c
	}
	return benchLoad(ctx, clients, kind, calls, time.Time{})
}

// benchLoad has every client make calls of kind at once, each until it has made calls of them (calls > 0)
// or until deadline, and returns every latency and the wall time.
func benchLoad(ctx context.Context, clients []*benchClient, kind string, calls int, deadline time.Time) ([]time.Duration, time.Duration, error) {
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	more := func(made int) bool {
		if calls > 0 {
			return made < calls
		}
		return time.Now().Before(deadline)
	}
	start := time.Now()
	for _, c := range clients {
		wg.Go(func() {
			local := make([]time.Duration, 0, max(calls, 1024))
			for made := 0; more(made) && ctx.Err() == nil; made++ {
				t0 := time.Now()
				if err := c.do(kind); err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
					return
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, 0, firstErr
	}
	if len(all) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		return nil, 0, errors.New("no calls completed")
	}
	return all, time.Since(start), nil
}

// benchAlternating measures one client per mode, taking turns call by call, so that the load of a
// shared machine falls on the three modes alike (rounds of hundreds of calls let it drift between them).
func benchAlternating(ctx context.Context, modes benchModes, kind string, calls int) (map[string][]time.Duration, map[string]time.Duration, error) {
	names := modes.names
	clients := map[string]*benchClient{}
	for _, mode := range names {
		c, err := benchDialVia(modes.url(mode, 0), modes.via[mode])
		if err != nil {
			return nil, nil, err
		}
		defer c.close()
		if kind != "version" {
			if err := c.prepare(); err != nil {
				return nil, nil, err
			}
		}
		for range min(20, calls) {
			if err := c.do(kind); err != nil {
				return nil, nil, err
			}
		}
		clients[mode] = c
	}
	samples := map[string][]time.Duration{}
	elapsed := map[string]time.Duration{}
	for i := range calls {
		for j := range names {
			mode := names[(i+j)%len(names)]
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			t0 := time.Now()
			if err := clients[mode].do(kind); err != nil {
				return nil, nil, fmt.Errorf("%s %s: %w", mode, kind, err)
			}
			d := time.Since(t0)
			samples[mode] = append(samples[mode], d)
			elapsed[mode] += d
		}
	}
	return samples, elapsed, nil
}

// benchHOL runs one client pulling 8 MiB answers beside 15 clients making small calls; it returns the
// small calls' p99 and throughput.
func benchHOL(ctx context.Context, modes benchModes, mode string) (time.Duration, float64, error) {
	puller, err := benchDial(modes.url(mode, 100))
	if err != nil {
		return 0, 0, err
	}
	defer puller.close()
	if err := puller.prepare(); err != nil {
		return 0, 0, err
	}
	stop := make(chan struct{})
	var pullErr error
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := puller.do("big"); err != nil {
				pullErr = err
				return
			}
		}
	}()
	smalls := make([]*benchClient, 15)
	for i := range smalls {
		c, err := benchDial(modes.url(mode, 101+i))
		if err != nil {
			close(stop)
			pwg.Wait()
			return 0, 0, err
		}
		defer c.close()
		smalls[i] = c
	}
	all, elapsed, err := benchLoad(ctx, smalls, "version", 0, time.Now().Add(holDuration))
	close(stop)
	pwg.Wait()
	if err != nil {
		return 0, 0, err
	}
	if pullErr != nil {
		return 0, 0, pullErr
	}
	_, _, p99 := percentiles(all)
	return p99, float64(len(all)) / elapsed.Seconds(), nil
}

// benchStartMux runs a mux in this process for upstream.
func benchStartMux(upstream string) (*mux.Mux, string, func(), error) {
	m, err := mux.New(mux.Config{Upstream: upstream, Token: benchToken, Addr: "127.0.0.1:0", MaxClients: 512, TabCap: mux.Off, Log: zerolog.Nop()})
	if err != nil {
		return nil, "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	stop := func() { cancel(); <-done }
	deadline := time.Now().Add(20 * time.Second)
	for !m.Stats().Upstream {
		if time.Now().After(deadline) {
			stop()
			return nil, "", nil, errors.New("mux did not connect to the browser")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return m, "ws://" + m.Addr() + "/" + benchToken, stop, nil
}

// benchStartRelay is the plain Go relay: one upstream connection per client, messages copied both ways
// without parsing.
func benchStartRelay(upstream string) (string, func(), error) {
	up := websocket.Upgrader{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
		u, _, err := d.Dial(upstream, nil)
		if err != nil {
			return
		}
		defer u.Close()
		c.SetReadLimit(-1)
		u.SetReadLimit(-1)
		done := make(chan struct{}, 2) // one per direction
		pipe := func(dst, src *websocket.Conn) {
			defer func() { done <- struct{}{} }()
			for {
				t, b, err := src.ReadMessage()
				if err != nil {
					return
				}
				if err := dst.WriteMessage(t, b); err != nil {
					return
				}
			}
		}
		go pipe(u, c)
		go pipe(c, u)
		<-done
	}))
	return "ws" + strings.TrimPrefix(srv.URL, "http"), func() { srv.CloseClientConnections(); srv.Close() }, nil
}

// benchRouting measures pure routing: 16 clients pipelining calls through the mux to upstream, an
// in-process fake (named name in the row) that answers at once.
func benchRouting(ctx context.Context, upstream, name string) ([]Row, error) {
	_, muxURL, stopMux, err := benchStartMux(upstream)
	if err != nil {
		return nil, err
	}
	defer stopMux()
	const clients, window = 16, 64
	var total atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	start := time.Now()
	deadline := start.Add(routingDuration)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, _, err := websocket.DefaultDialer.Dial(muxURL+"/client-route"+strconv.Itoa(i), nil)
			if err != nil {
				errc <- err
				return
			}
			defer ws.Close()
			var sent, got int64
			send := func() error {
				sent++
				return ws.WriteMessage(websocket.TextMessage, []byte(`{"id":`+strconv.FormatInt(sent, 10)+`,"method":"Browser.getVersion"}`))
			}
			for range window {
				if err := send(); err != nil {
					errc <- err
					return
				}
			}
			for got < sent {
				if _, _, err := ws.ReadMessage(); err != nil {
					errc <- err
					return
				}
				got++
				total.Add(1)
				if time.Now().Before(deadline) && ctx.Err() == nil {
					if err := send(); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errc:
		return nil, err
	default:
	}
	// Each call is two routed messages (command in, answer out).
	rate := float64(2*total.Load()) / elapsed.Seconds()
	return []Row{{Group: "mux", Name: "pure routing, " + name + ", 16 clients", Value: rate, Unit: "msgs/s", Budget: ">= 100k msgs/s", OK: rate >= 100_000}}, nil
}

// benchFakeBrowser is an in-process browser that answers every command at once with a small result.
func benchFakeBrowser() (string, func()) {
	up := websocket.Upgrader{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	mx := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mx)
	mx.HandleFunc("/json/version", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"Browser":"Fake/1","webSocketDebuggerUrl":"ws://%s/devtools/browser/fake"}`, r.Host)
	})
	mx.HandleFunc("/devtools/browser/fake", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		out := make(chan []byte, 4096) // the reader rarely waits on the writer below it
		go func() {
			// Answers are framed by hand into one buffered write per burst: the fake must cost less
			// than what it measures.
			bw := bufio.NewWriterSize(c.NetConn(), 64<<10)
			for b := range out {
				benchServerFrame(bw, b)
				if len(out) == 0 && bw.Flush() != nil {
					return
				}
			}
		}()
		defer close(out)
		for {
			_, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			if a := benchAnswer(b); a != nil {
				out <- a
			}
		}
	})
	srv.Start()
	return srv.URL, func() { srv.CloseClientConnections(); srv.Close() }
}

// benchAnswer is the fakes' answer to command b, at once and small; nil for anything but a command.
func benchAnswer(b []byte) []byte {
	i := bytes.IndexByte(b, ',')
	if i < 0 || !bytes.HasPrefix(b, []byte(`{"id":`)) {
		return nil
	}
	res := `{"protocolVersion":"1.3","product":"Fake/1"}`
	if bytes.Contains(b, []byte(`"Target.getTargets"`)) {
		res = `{"targetInfos":[]}`
	}
	return []byte(string(b[:i]) + `,"result":` + res + `}`)
}

// benchIdleMemory measures what an idle client costs the mux: heap and stacks after connecting idle
// clients that only did the WebSocket handshake (raw sockets, so the client side costs almost nothing).
func benchIdleMemory(ctx context.Context) ([]Row, error) {
	fake, stopFake := benchFakeBrowser()
	defer stopFake()
	_, muxURL, stopMux, err := benchStartMux(fake)
	if err != nil {
		return nil, err
	}
	defer stopMux()
	hostPath := strings.TrimPrefix(muxURL, "ws://")
	host, path, _ := strings.Cut(hostPath, "/")
	measure := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse + ms.StackInuse
	}
	before := measure()
	conns := make([]net.Conn, 0, idleClients)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range idleClients {
		c, err := net.Dial("tcp", host)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET /%s/client-idle%d HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", path, i, host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, fmt.Errorf("idle client %d: %s", i, resp.Status)
		}
	}
	after := measure()
	per := float64(int64(after)-int64(before)) / idleClients / 1024
	return []Row{{Group: "mux", Name: fmt.Sprintf("memory per idle client (%d clients)", idleClients), Value: per, Unit: "KiB", Budget: "<= 64 KiB", OK: per <= 64}}, nil
}

// benchChromium is the headless Chromium the mux rows run against.
type benchChromium struct {
	cmd      *exec.Cmd
	dir      string
	http, ws string
}

func benchLaunchChromium(bin string, extra ...string) (*benchChromium, error) {
	dir, err := os.MkdirTemp("", "vibe-bench-chromium-")
	if err != nil {
		return nil, err
	}
	args := append(testkit.HeadlessChromiumArgs(dir), "--remote-debugging-port=0")
	args = append(append(args, extra...), "about:blank")
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &benchChromium{cmd: cmd, dir: dir}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if lines := strings.Fields(string(b)); err == nil && len(lines) >= 2 {
			c.http = "http://127.0.0.1:" + lines[0]
			c.ws = "ws://127.0.0.1:" + lines[0] + lines[1]
			return c, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.stop()
	return nil, errors.New("chromium not ready after 30s")
}

func (c *benchChromium) stop() {
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	c.cmd.Wait()
	os.RemoveAll(c.dir)
}

// benchServerFrame writes b as one unmasked text frame.
func benchServerFrame(w *bufio.Writer, b []byte) {
	n := len(b)
	switch {
	case n <= 125:
		w.Write([]byte{0x81, byte(n)})
	case n <= 0xFFFF:
		w.Write([]byte{0x81, 126, byte(n >> 8), byte(n)})
	default:
		w.Write([]byte{0x81, 127, 0, 0, 0, 0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	}
	w.Write(b)
}
