package mux

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux/cdpwire"
)

// TestKeeperRefusedIsRetried: while another client holds the keeper its hello refuses the mux, which
// logs a failed connection and retries with backoff; once the keeper is free the mux connects.
func TestKeeperRefusedIsRetried(t *testing.T) {
	var logs logBuffer
	fb := newFakeBrowserOn(t, overKeeper)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	holder, _, held, err := cdpwire.Dial(ctx, fb.kp.socket) // another client, connected first
	if err != nil {
		t.Fatal(err)
	}
	m := runMux(t, fb, Config{Log: zerolog.New(&logs)})
	testkit.WaitFor(t, 5*time.Second, "the mux refused and retried", func() bool { return fb.keeperRefusals() >= 2 })
	if m.Stats().Upstream {
		t.Fatal("the mux counts a refused keeper as connected")
	}
	if !logs.has("browser connection failed") || !logs.has(cdpwire.ErrRefused.Error()) || !logs.has("another client holds the browser's pipe") {
		t.Fatalf("log of a refused dial:\n%s", strings.Join(logs.lines(), "\n"))
	}
	held.Close()
	holder.Close()
	testkit.WaitFor(t, 5*time.Second, "connected once the keeper is free", func() bool { return m.Stats().Upstream })
	c := newClient(t, m, "c")
	if id := c.createTarget("about:blank"); !slices.Contains(c.targetIDs(), id) {
		t.Fatal("client behind a keeper that was busy does not own its tab")
	}
}

// TestKeeperMessageInPieces: messages reach the mux in socket reads of a few bytes, one read ending one
// message and starting the next, the NUL alone in another; each arrives whole, in order, at its client.
func TestKeeperMessageInPieces(t *testing.T) {
	fb := newFakeBrowserOn(t, overKeeper)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	sid := c.attach(c.createTarget("about:blank"))
	fb.setStall("Runtime.evaluate", true)
	c.sendRaw(`{"id":1,"method":"Runtime.evaluate","params":{"expression":"a"},"sessionId":"` + sid + `"}`)
	c.sendRaw(`{"id":2,"method":"Runtime.evaluate","params":{"expression":"b"},"sessionId":"` + sid + `"}`)
	testkit.WaitFor(t, 5*time.Second, "both calls reached the browser", func() bool { return len(fb.got("Runtime.evaluate")) == 2 })
	got := fb.got("Runtime.evaluate")
	first := `{"id":` + string(got[0].ID) + `,"result":{"result":{"type":"string","value":"` + strings.Repeat("a", 300) + `"}},"sessionId":"` + sid + `"}`
	second := `{"id":` + string(got[1].ID) + `,"result":{"result":{"type":"string","value":"b"}},"sessionId":"` + sid + `"}`
	wire := first + "\x00" + second
	var pieces []string
	for i, n := 0, 1; i < len(wire); i, n = i+n, n%7+1 {
		pieces = append(pieces, wire[i:min(len(wire), i+n)])
	}
	pieces = append(pieces, "\x00")
	fb.sendRaw(pieces...)
	for id, want := range map[string]string{"1": strings.Repeat("a", 300), "2": "b"} {
		r := result[struct {
			Result struct{ Value string } `json:"result"`
		}](t, c.waitID(id))
		if r.Result.Value != want {
			t.Errorf("answer %s, read in %d pieces, = %.40q; want %.40q", id, len(pieces), r.Result.Value, want)
		}
	}
}

// TestKeeperVersion: over a keeper the mux's /json/version is Chrome's whole object, read from
// Browser.getVersion, its webSocketDebuggerUrl the mux's own, and /json/list shows nothing.
func TestKeeperVersion(t *testing.T) {
	fb := newFakeBrowserOn(t, overKeeper)
	m := startMux(t, fb, Config{})
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get("http://" + m.Addr() + "/tok" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	var v map[string]string
	if err := json.Unmarshal(get("/json/version"), &v); err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(v))
	want := []string{"Browser", "File-Path-Style", "Protocol-Version", "User-Agent", "V8-Version", "WebKit-Version", "webSocketDebuggerUrl"}
	if !slices.Equal(keys, want) {
		t.Fatalf("/json/version keys %q; want %q", keys, want)
	}
	if v["Browser"] != "FakeChrome/1.0" || !strings.HasPrefix(v["webSocketDebuggerUrl"], "ws://"+m.Addr()+"/tok/devtools/browser/") {
		t.Fatalf("/json/version = %v; want the browser's, reached through the mux", v)
	}
	if got := strings.TrimSpace(string(get("/json/list"))); got != "[]" {
		t.Fatalf("/json/list = %s; want []", got)
	}
	if n := len(fb.got("Browser.getVersion")); n != 1 {
		t.Fatalf("Browser.getVersion sent %d times on connecting; want once", n)
	}
}

// TestVersionObject: from a real Chromium's Browser.getVersion the mux builds what the same Chromium
// serves at /json/version (both read from Chromium 156 headless on Linux).
func TestVersionObject(t *testing.T) {
	res := `{"protocolVersion":"1.3","product":"Chrome/156.0.8078.114","revision":"@ea19f9737303a76e07b53c6a1eec43355aca3b1d",` +
		`"userAgent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36","jsVersion":"15.6.75.63"}`
	chrome := map[string]any{
		"Browser":          "Chrome/156.0.8078.114",
		"File-Path-Style":  "posix",
		"Protocol-Version": "1.3",
		"User-Agent":       "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36",
		"V8-Version":       "15.6.75.63",
		"WebKit-Version":   "537.36 (@ea19f9737303a76e07b53c6a1eec43355aca3b1d)",
	}
	got, err := versionObject([]byte(res), true)
	if err != nil || !maps.Equal(got, chrome) {
		t.Fatalf("versionObject(local) = %v, %v; want %v", got, err, chrome)
	}
	delete(chrome, "File-Path-Style") // a browser reached by URL may be on another host
	if got, _ := versionObject([]byte(res), false); !maps.Equal(got, chrome) {
		t.Fatalf("versionObject(remote) = %v; want %v", got, chrome)
	}
}

// TestKeeperHungBrowserIsRelaunched: a keeper says hello for a hung browser too; a browser that does not
// answer the connection's Browser.getVersion is a failed dial, so the tries run out and the relaunch
// hook replaces it.
func TestKeeperHungBrowserIsRelaunched(t *testing.T) {
	fb := newFakeBrowserOn(t, overKeeper)
	fb2 := newFakeBrowserOn(t, overKeeper)
	fb.setStall("Browser.getVersion", true)
	relaunches := make(chan struct{}, 10)
	m := runMux(t, fb, Config{ReconnectTries: 2, PongTimeout: 100 * time.Millisecond, Hooks: Hooks{Relaunch: func(context.Context) (string, error) {
		relaunches <- struct{}{}
		return fb2.endpoint(), nil
	}}})
	testkit.WaitFor(t, 5*time.Second, "the replacement connected", func() bool { return fb2.connections() == 1 && m.Stats().Upstream })
	// A dial the keeper refused (it had not yet seen the last connection go) is a try too.
	if tries := fb.connections() + fb.keeperRefusals(); len(relaunches) != 1 || tries != 2 {
		t.Fatalf("relaunched %d times after %d dials of the hung browser; want once after 2", len(relaunches), tries)
	}
}

// transportTests are each transport's round trip: what write puts on the wire, read gives back.
var transportTests = []struct {
	name string
	make func(q *sendQueue) transport
	// mask: the mux's writes are masked (a WebSocket client's), which a browser's reads undo.
	mask bool
	// writeAllocs and readAllocs are the allocations per message on the hot path: on a keeper's socket
	// only the message read; the WebSocket's frame headers also escape to the heap (through bufio's
	// io.Writer and io.ReadFull), as they did before the keeper.
	writeAllocs, readAllocs float64
}{
	{"websocket", func(q *sendQueue) transport { return newWSTransport(q) }, true, 1, 3},
	{"keeper", func(*sendQueue) transport { return keeperTransport{} }, false, 0, 1},
}

// readBack turns what the mux wrote into what a browser would send back on the same transport: a
// WebSocket's frames re-framed unmasked (a browser's frames are not masked), a pipe's bytes as they are.
func readBack(t testing.TB, wire []byte, masked bool) []byte {
	t.Helper()
	if !masked {
		return wire
	}
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	br := bufio.NewReader(bytes.NewReader(wire))
	for {
		b, _, err := readWireMessage(br, 1<<30, func([]byte) {})
		if err != nil {
			break
		}
		writeFrame(bw, wholeFrame(b), false)
	}
	bw.Flush()
	return out.Bytes()
}

// FuzzTransports round-trips a message written from three parts, then a small one, through each
// transport: the first comes back whole, or over the limit as its prefix, and the next one intact.
func FuzzTransports(f *testing.F) {
	for _, n := range frameBoundaries {
		f.Add([]byte(`{"id":1,"result":{}}`), uint32(n), uint16(n/3), uint16(n/2))
	}
	f.Add([]byte{0x00, 0xff}, uint32(70000), uint16(9), uint16(0))
	f.Fuzz(func(t *testing.T, seed []byte, size uint32, cut1, cut2 uint16) {
		n := int(size % (1<<17 + 1))
		seed = bytes.ReplaceAll(seed, []byte{0}, nil) // JSON never holds a raw NUL: the pipe's end of message
		payload := make([]byte, n)
		for i := range payload {
			if len(seed) > 0 {
				payload[i] = seed[i%len(seed)]
			} else {
				payload[i] = byte(i%255 + 1)
			}
		}
		i := int(cut1) % (n + 1)
		j := i + int(cut2)%(n-i+1)
		msg := frame{head: payload[:i], mid: payload[i:j], tail: payload[j:]}
		for _, tt := range transportTests {
			tr := tt.make(newSendQueue(1 << 20))
			var buf bytes.Buffer
			bw := bufio.NewWriterSize(&buf, 4096)
			if err := tr.write(bw, msg); err != nil {
				t.Fatal(err)
			}
			if err := tr.write(bw, wholeFrame([]byte(`{"id":2}`))); err != nil {
				t.Fatal(err)
			}
			bw.Flush()
			wire := readBack(t, buf.Bytes(), tt.mask)
			for _, limit := range []int{256 << 20, n - 1} {
				if limit < 0 {
					continue
				}
				br := bufio.NewReaderSize(bytes.NewReader(wire), 4096)
				b, over, err := tr.read(br, limit)
				want, wantOver := payload, false
				if n > limit {
					want, wantOver = payload[:min(n, overPrefix)], true
				}
				if err != nil || over != wantOver || !bytes.Equal(b, want) {
					t.Fatalf("%s: read of %d bytes (limit %d) = %d bytes (the message's: %v), over=%v, %v; want %d bytes, over=%v",
						tt.name, n, limit, len(b), bytes.Equal(b, want), over, err, len(want), wantOver)
				}
				b, _, err = tr.read(br, limit)
				if err != nil || string(b) != `{"id":2}` {
					t.Fatalf("%s: message after %d bytes (limit %d) = %q, %v; want the next message", tt.name, n, limit, b, err)
				}
				if _, _, err := tr.read(br, limit); err != io.EOF {
					t.Fatalf("%s: after the last message: %v; want io.EOF", tt.name, err)
				}
			}
		}
	})
}

// TestTransportAllocations: the hot path allocates no more per message than its transport's framing
// needs (transportTests).
func TestTransportAllocations(t *testing.T) {
	msg := frame{head: []byte(`{"id":`), mid: []byte("12345"), tail: []byte(`,"result":{"value":"` + strings.Repeat("v", 2000) + `"}}`)}
	for _, tt := range transportTests {
		tr := tt.make(newSendQueue(1 << 20))
		bw := bufio.NewWriterSize(io.Discard, 64<<10)
		if n := testing.AllocsPerRun(200, func() { tr.write(bw, msg) }); n > tt.writeAllocs {
			t.Errorf("%s: write allocates %v times per message; want at most %v", tt.name, n, tt.writeAllocs)
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		const msgs = 300
		for range msgs {
			tr.write(w, msg)
		}
		w.Flush()
		wire := readBack(t, buf.Bytes(), tt.mask)
		r := bytes.NewReader(wire)
		br := bufio.NewReaderSize(r, 64<<10)
		n := testing.AllocsPerRun(msgs-1, func() {
			if _, _, err := tr.read(br, 1<<20); err != nil {
				t.Fatal(err)
			}
		})
		if n > tt.readAllocs {
			t.Errorf("%s: read allocates %v times per message; want at most %v", tt.name, n, tt.readAllocs)
		}
	}
}
