package mux

import (
	"bufio"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux/cdpwire"
)

// TestPipeIsMadeFresh: a mux that takes a keeper's pipe after another mux (Chromium keeps one connection on
// its pipe, so the first mux's sessions, discovery and auto-attach are still there) undoes what the first
// left before anything of its own: auto-attach and discovery off, the download behaviour reset, every
// session of the first detached by its target's id (a session attached through another going with it).
func TestPipeIsMadeFresh(t *testing.T) {
	fb := newFakeBrowserOn(t, overKeeper)
	first, err := New(Config{Upstream: fb.endpoint(), Token: "tok", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- first.Serve(ctx) }()
	testkit.WaitFor(t, 5*time.Second, "the first mux connected", func() bool { return first.Stats().Upstream })
	c := newClient(t, first, "c")
	tid := c.createTarget("about:blank")
	sid := c.attach(tid)
	fb.mu.Lock()
	fb.attachLocked(fb.targets[tid], sid, false) // a session attached through the client's, as a frame's would be
	left := map[string]bool{}
	for s := range fb.sessions {
		left[s] = true
	}
	fb.mu.Unlock()
	if len(left) < 2 {
		t.Fatalf("the first mux left sessions %v; want its client's and the one attached through it", left)
	}
	stop() // the first mux goes, and gives the pipe back
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	var seen int
	testkit.WaitFor(t, 5*time.Second, "the keeper front to take the pipe back", func() bool {
		fb.mu.Lock()
		defer fb.mu.Unlock()
		seen = len(fb.received) // the take-back's NUL comes after all the first mux wrote
		return fb.kp.nuls == 1
	})

	startMux(t, fb, Config{})
	fb.mu.Lock()
	defer fb.mu.Unlock()
	for s := range left {
		if _, ok := fb.sessions[s]; ok {
			t.Errorf("session %s of the first mux still attached after the second took the pipe", s)
		}
	}
	var methods []string
	for _, m := range fb.received[seen:] {
		methods = append(methods, m.Method+" "+string(m.Params))
	}
	want := []string{
		`Browser.getVersion `,
		`Target.setAutoAttach {"autoAttach":false,"waitForDebuggerOnStart":false,"flatten":true}`,
		`Target.setDiscoverTargets {"discover":false}`,
		`Browser.setDownloadBehavior {"behavior":"default"}`,
		`Target.getTargets {"filter":[{}]}`,
	}
	if len(methods) < len(want) || !slices.Equal(methods[:len(want)], want) {
		t.Fatalf("the second mux began with\n%s\nwant\n%s", strings.Join(methods, "\n"), strings.Join(want, "\n"))
	}
	rest := methods[len(want):]
	detaches := 0
	for detaches < len(rest) && strings.HasPrefix(rest[detaches], "Target.detachFromTarget ") {
		if !strings.Contains(rest[detaches], `"targetId"`) {
			t.Errorf("detach %q; want it by target id", rest[detaches])
		}
		detaches++
	}
	if detaches == 0 || !strings.Contains(strings.Join(rest[detaches:], "\n"), `Target.setDiscoverTargets {"discover":true`) {
		t.Errorf("after the reset:\n%s\nwant the detaches, then the mux's own connection", strings.Join(rest, "\n"))
	}
}

// TestSkipTheRestOfAMessage: a keeper that stopped reading inside a message hands the pipe over with skip;
// what is left of that message is dropped even when it reads as the answer to the mux's first command (a
// page can make Chromium write such text), so the version the mux serves is the browser's.
func TestSkipTheRestOfAMessage(t *testing.T) {
	m, err := New(Config{Upstream: "http://127.0.0.1:1", Token: "tok", Port: 1}) // never served: no listener
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.nextID = 41
	m.mu.Unlock()
	toR, toW := io.Pipe()
	fromR, fromW := io.Pipe()
	go func() { // the browser: the rest of a message first, then an answer to every command
		fromW.Write([]byte(`{"id":42,"result":{"protocolVersion":"1.3","product":"Forged/1"}}` + "\x00"))
		br := bufio.NewReader(toR)
		for {
			b, _, err := cdpwire.ReadMessage(br, 1<<20)
			if err != nil {
				fromW.Close()
				return
			}
			info, _ := cdpwire.ScanCommand(b)
			res := `{}`
			switch info.Method {
			case "Browser.getVersion":
				res = `{"protocolVersion":"1.3","product":"Chrome/156","userAgent":"AppleWebKit/537.36 (KHTML)"}`
			case "Target.getTargets":
				res = `{"targetInfos":[]}`
			}
			fromW.Write([]byte(`{"id":` + string(info.ID(b)) + `,"result":` + res + "}\x00"))
		}
	}()
	defer toW.Close()
	x := &pipeExchange{m: m, w: toW, br: bufio.NewReader(fromR)}
	v, err := x.open(true)
	if err != nil {
		t.Fatal(err)
	}
	if v["Browser"] != "Chrome/156" {
		t.Errorf("version = %v; want the browser's Chrome/156, not the rest of a message before the mux's time", v["Browser"])
	}
}
