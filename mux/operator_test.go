package mux

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

// viewSession returns the CDP session of a view's operator session.
func viewSession(m *Mux, v *View) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return v.sess.id
}

// targetUse is what a client can observe (or the mux counts) of its tabs' use: LRU ticks and times.
func targetUse(m *Mux, ids ...string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, id := range ids {
		if t := m.targets[id]; t != nil {
			fmt.Fprintf(&b, "%s:%d@%s ", id, t.used, t.usedAt.Format(time.RFC3339Nano))
		}
	}
	return b.String()
}

// testCtx bounds a test's operator calls, so a broken rule fails the test instead of hanging it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func clientActive(m *Mux, id string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clients[id].active
}

func TestOperatorInvisible(t *testing.T) { forEachTransport(t, testOperatorInvisible) }

func testOperatorInvisible(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{TabCap: 2})
	ctx := testCtx(t)

	watcher := newClient(t, m, "watcher") // discovery and auto-attach on: would see any event
	result[struct{}](t, watcher.call("Target.setDiscoverTargets", `{"discover":true,"filter":[{}]}`, ""))
	result[struct{}](t, watcher.call("Target.setAutoAttach", `{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true,"filter":[{}]}`, ""))
	p1 := watcher.createTarget("https://one.example/")
	p2 := watcher.createTarget("https://two.example/")
	s1 := watcher.attach(p1)
	watcher.call("Runtime.evaluate", `{"expression":"1"}`, s1) // p1 most recently used
	lister := newClient(t, m, "lister")                        // discovery on, never attached: Chrome's "attached" flips would show
	result[struct{}](t, lister.call("Target.setDiscoverTargets", `{"discover":true}`, ""))
	own := lister.createTarget("https://own.example/")
	wantWatcher, wantLister := watcher.targetIDs(), lister.targetIDs()

	before := m.Stats()
	use := targetUse(m, p1, p2, own)
	active := clientActive(m, "watcher")
	seen := len(watcher.all())
	listerSeen := len(lister.all())
	quiet := func(what string) {
		t.Helper()
		testkit.WaitFor(t, 5*time.Second, what, func() bool {
			m.mu.Lock()
			defer m.mu.Unlock()
			return len(m.pending) == 0
		})
	}

	// Watching one of the watcher's tabs (a live view, a frame, input) and a thumbnail of the other.
	v, err := m.op.View(ctx, p1, ViewOptions{MaxWidth: 640})
	if err != nil {
		t.Fatalf("View(%s): %v", p1, err)
	}
	if _, err := v.Next(ctx); err != nil {
		t.Fatalf("Next: %v", err)
	}
	if err := v.Mouse(ctx, MouseEvent{Type: "mouseMoved", X: 1, Y: 2}); err != nil {
		t.Fatalf("Mouse: %v", err)
	}
	for _, id := range []string{p2, own} {
		if _, err := m.op.Thumbnail(ctx, id, 200, 50); err != nil {
			t.Fatalf("Thumbnail(%s): %v", id, err)
		}
	}
	quiet("operator calls answered")
	s := m.Stats()
	if s.Viewers != 1 || s.Clients != before.Clients {
		t.Errorf("Stats while watching: Viewers %d, Clients %d; want 1, %d", s.Viewers, s.Clients, before.Clients)
	}
	if !s.LastActivity.Equal(before.LastActivity) || s.IdleSeconds < before.IdleSeconds {
		t.Errorf("Stats while watching: LastActivity %v, IdleSeconds %v; want %v, at least %v (watching is not activity)",
			s.LastActivity, s.IdleSeconds, before.LastActivity, before.IdleSeconds)
	}
	if got := clientActive(m, "watcher"); !got.Equal(active) {
		t.Errorf("watcher's last activity = %v while watched; want %v", got, active)
	}
	if got := targetUse(m, p1, p2, own); got != use {
		t.Errorf("tab use while watched = %s; want %s (LRU untouched)", got, use)
	}
	for i, cs := range s.PerClient {
		if b := before.PerClient[i]; cs.ID != b.ID || cs.Tabs != b.Tabs || !cs.LastActivity.Equal(b.LastActivity) {
			t.Errorf("PerClient[%d] = %+v while watching; want %+v", i, cs, b)
		}
	}

	// A human tab: created, watched, used, closed, while the clients look.
	h, err := m.op.NewHumanTab(ctx, "https://login.example/")
	if err != nil {
		t.Fatalf("NewHumanTab: %v", err)
	}
	hv, err := m.op.View(ctx, h, ViewOptions{})
	if err != nil {
		t.Fatalf("View(human tab): %v", err)
	}
	if err := hv.Navigate(ctx, "https://login.example/form"); err != nil {
		t.Fatalf("Navigate: %v", err)
	}
	if err := hv.InsertText(ctx, "secret"); err != nil {
		t.Fatalf("InsertText: %v", err)
	}
	if got := watcher.targetIDs(); !slices.Equal(got, wantWatcher) {
		t.Errorf("watcher getTargets with a human tab open = %v; want %v", got, wantWatcher)
	}
	if got := lister.targetIDs(); !slices.Equal(got, wantLister) {
		t.Errorf("lister getTargets with a human tab open = %v; want %v", got, wantLister)
	}
	seen++                                        // the watcher's getTargets answer
	ov, err := m.op.View(ctx, own, ViewOptions{}) // the lister is not attached to its tab: it must still look so
	if err != nil {
		t.Fatalf("View(%s): %v", own, err)
	}
	if r := lister.call("Target.getTargets", "", ""); !strings.Contains(string(r.Result), `"attached":false`) || strings.Contains(string(r.Result), `"attached":true`) {
		t.Errorf("lister getTargets while its tab is watched = %s; want it unattached", r.Result)
	}
	ov.Close()
	hv.Close()
	v.Close()
	if err := m.op.CloseHumanTab(h); err != nil {
		t.Fatalf("CloseHumanTab: %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "human tab closed, operator sessions gone", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return !fb.hasTarget(h) && len(m.op.sessions) == 0 && len(m.pending) == 0 && fb.casts() == 0
	})
	if got := targetUse(m, p1, p2, own); got != use {
		t.Errorf("tab use after watching = %s; want %s (LRU untouched)", got, use)
	}

	// A round trip through the watcher flushes anything the mux might still have queued for it.
	watcher.call("Browser.getVersion", "", "")
	for _, raw := range watcher.all()[seen:] {
		if !strings.Contains(string(raw), `"product"`) {
			t.Errorf("watcher got %s while an operator watched its tab and a human tab came and went", raw)
		}
	}
	lister.call("Browser.getVersion", "", "")
	for _, raw := range lister.all()[listerSeen:] {
		var msg cdpMsg
		if json.Unmarshal(raw, &msg); msg.Method != "" {
			t.Errorf("lister got %s after an operator took a thumbnail of its tab", raw)
		}
	}
	if got := watcher.targetIDs(); !slices.Equal(got, wantWatcher) {
		t.Errorf("watcher getTargets = %v; want %v", got, wantWatcher)
	}
	if got := lister.targetIDs(); !slices.Equal(got, wantLister) {
		t.Errorf("lister getTargets = %v; want %v", got, wantLister)
	}
	if after := m.Stats(); after.Clients != before.Clients || after.Viewers != 0 {
		t.Errorf("Stats after: Clients %d, Viewers %d; want %d, 0", after.Clients, after.Viewers, before.Clients)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// pendingFrame returns the frame a view holds, not taken yet ("" if none).
func pendingFrame(v *View) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return string(v.next)
}

func TestViewBackPressure(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	ctx := testCtx(t)
	c := newClient(t, m, "agent")
	page := c.createTarget("https://slow.example/")

	v, err := m.op.View(ctx, page, ViewOptions{Quality: 70, MaxWidth: 800, MaxHeight: 600, EveryNthFrame: 2})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	sid := viewSession(m, v)
	start := fb.got("Page.startScreencast")
	if len(start) != 1 || start[0].SessionID != sid {
		t.Fatalf("startScreencast = %v; want one on the view's session %s", start, sid)
	}
	var sp map[string]any
	json.Unmarshal(start[0].Params, &sp)
	if want := map[string]any{"format": "jpeg", "quality": 70.0, "maxWidth": 800.0, "maxHeight": 600.0, "everyNthFrame": 2.0}; fmt.Sprint(sp) != fmt.Sprint(want) {
		t.Errorf("startScreencast params = %v; want %v", sp, want)
	}

	// The viewer takes nothing while the browser paints four more frames: only the newest waits.
	for range 4 {
		fb.frame()
	}
	testkit.WaitFor(t, 5*time.Second, "frame 5 pending", func() bool { return strings.Contains(pendingFrame(v), b64("frame-5")) })
	if n := len(fb.got("Page.screencastFrameAck")); n != 0 {
		t.Fatalf("browser got %d acks before the viewer took a frame; want 0", n)
	}
	f, err := v.Next(ctx)
	if err != nil || string(f.JPEG) != "frame-5" || f.DeviceWidth != 800 || f.DeviceHeight != 600 || f.Timestamp.Unix() != 1700000000 {
		t.Fatalf("Next = %q %vx%v @%v, %v; want frame-5 800x600 @1700000000", f.JPEG, f.DeviceWidth, f.DeviceHeight, f.Timestamp, err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if f, err := v.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Next = %q, %v; want no frame left (the older four were replaced)", f.JPEG, err)
	}
	cancel()
	// Taking the newest acknowledges it and the four it replaced: Chrome counts frames in flight, and one
	// left unacknowledged would hold a place for good.
	testkit.WaitFor(t, 5*time.Second, "five acks", func() bool { return len(fb.got("Page.screencastFrameAck")) == 5 })
	var acked []string
	for _, ack := range fb.got("Page.screencastFrameAck") {
		if ack.SessionID != sid {
			t.Errorf("ack %s on %s; want it on the view's session %s", ack.Params, ack.SessionID, sid)
		}
		acked = append(acked, string(ack.Params))
	}
	if want := []string{`{"sessionId":5}`, `{"sessionId":1}`, `{"sessionId":2}`, `{"sessionId":3}`, `{"sessionId":4}`}; !slices.Equal(acked, want) {
		t.Errorf("acks = %q; want the taken frame's, then the replaced ones': %q", acked, want)
	}
	fb.frame()
	if f, err := v.Next(ctx); err != nil || string(f.JPEG) != "frame-6" {
		t.Fatalf("Next = %q, %v; want frame-6", f.JPEG, err)
	}
	testkit.WaitFor(t, 5*time.Second, "six acks", func() bool { return len(fb.got("Page.screencastFrameAck")) == 6 })
	if s := m.Stats(); s.Viewers != 1 {
		t.Errorf("Stats.Viewers = %d while watching; want 1", s.Viewers)
	}

	// The viewer leaves: the screencast stops and the session goes; a late frame is never delivered.
	v.Close()
	testkit.WaitFor(t, 5*time.Second, "screencast stopped and session detached", func() bool {
		stops := fb.got("Page.stopScreencast")
		return len(stops) == 1 && stops[0].SessionID == sid && fb.sessionOf(page) == "" && fb.casts() == 0
	})
	fb.send(fmt.Sprintf(`{"method":"Page.screencastFrame","params":{"data":%q,"metadata":{},"sessionId":7},"sessionId":%q}`, b64("frame-7"), sid))
	if f, err := v.Next(ctx); !errors.Is(err, ErrViewClosed) {
		t.Fatalf("Next after Close = %q, %v; want ErrViewClosed", f.JPEG, err)
	}
	if n := len(fb.got("Page.screencastFrameAck")); n != 6 {
		t.Errorf("acks = %d; want 6: a frame after Close is never acknowledged", n)
	}
	if s := m.Stats(); s.Viewers != 0 {
		t.Errorf("Stats.Viewers = %d after Close; want 0", s.Viewers)
	}

	// A viewer whose context ends leaves the same way.
	vctx, vcancel := context.WithCancel(ctx)
	v2, err := m.op.View(vctx, page, ViewOptions{})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	sid2 := viewSession(m, v2)
	vcancel()
	testkit.WaitFor(t, 5*time.Second, "screencast stopped when the viewer's context ended", func() bool {
		stops := fb.got("Page.stopScreencast")
		return len(stops) == 2 && stops[1].SessionID == sid2 && fb.casts() == 0 && m.Stats().Viewers == 0
	})
	<-v2.Done()
}

// TestViewNavigations: a frame says how many navigations of its page's main frame the view has seen, new
// documents and same-document ones alike, and a subframe's count for nothing: the tab page asks for the
// page's title and URL when it changes.
func TestViewNavigations(t *testing.T) { forEachTransport(t, testViewNavigations) }

func testViewNavigations(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{})
	ctx := testCtx(t)
	c := newClient(t, m, "agent")
	page := c.createTarget("https://nav.example/")
	sess := c.attach(page)
	v, err := m.op.View(ctx, page, ViewOptions{})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	defer v.Close()
	tests := []struct {
		name string
		do   func()
		want int
	}{
		{"first frame", func() {}, 0},
		{"the agent navigates", func() { c.call("Page.navigate", `{"url":"https://nav.example/two"}`, sess) }, 1},
		{"a subframe navigates", func() {
			fb.pageEvent(page, `{"method":"Page.frameNavigated","params":{"frame":{"id":"SUB","parentId":"`+page+`","url":"https://ad.example/"}}}`)
		}, 1},
		{"a fragment", func() {
			fb.pageEvent(page, `{"method":"Page.navigatedWithinDocument","params":{"frameId":"`+page+`","url":"https://nav.example/two#b"}}`)
		}, 2},
		{"a subframe's fragment", func() {
			fb.pageEvent(page, `{"method":"Page.navigatedWithinDocument","params":{"frameId":"SUB","url":"https://ad.example/#x"}}`)
		}, 2},
	}
	for _, tt := range tests {
		tt.do()
		// The browser's next frame follows the event on its connection: taking it, the view has read it.
		want := fmt.Sprintf("frame-%d", fb.frame())
		var f Frame
		for string(f.JPEG) != want {
			if f, err = v.Next(ctx); err != nil {
				t.Fatalf("%s: Next: %v", tt.name, err)
			}
		}
		if f.Navigations != tt.want {
			t.Errorf("%s: Next = Navigations %d; want %d", tt.name, f.Navigations, tt.want)
		}
	}
}

func TestViewInput(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	ctx := testCtx(t)
	c := newClient(t, m, "agent")
	page := c.createTarget("https://form.example/")
	v, err := m.op.View(ctx, page, ViewOptions{})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	defer v.Close()
	sid := viewSession(m, v)
	steps := []struct {
		name   string
		do     func() error
		method string
		want   string // the params the browser must get, as JSON
	}{
		{"press", func() error {
			return v.Mouse(ctx, MouseEvent{Type: "mousePressed", X: 10.5, Y: 20, Button: "left", Buttons: 1, ClickCount: 1, Modifiers: ModShift})
		}, "Input.dispatchMouseEvent", `{"button":"left","buttons":1,"clickCount":1,"modifiers":8,"type":"mousePressed","x":10.5,"y":20}`},
		{"move", func() error { return v.Mouse(ctx, MouseEvent{Type: "mouseMoved", X: 3, Y: 4}) },
			"Input.dispatchMouseEvent", `{"button":"none","buttons":0,"clickCount":0,"modifiers":0,"type":"mouseMoved","x":3,"y":4}`},
		{"wheel", func() error { return v.Mouse(ctx, MouseEvent{Type: "mouseWheel", X: 5, Y: 6, DeltaY: 120}) },
			"Input.dispatchMouseEvent", `{"button":"none","buttons":0,"clickCount":0,"deltaX":0,"deltaY":120,"modifiers":0,"type":"mouseWheel","x":5,"y":6}`},
		{"key down", func() error {
			return v.Key(ctx, KeyEvent{Type: "keyDown", Key: "a", Code: "KeyA", Text: "a", WindowsVirtualKeyCode: 65})
		}, "Input.dispatchKeyEvent", `{"code":"KeyA","key":"a","modifiers":0,"nativeVirtualKeyCode":65,"text":"a","type":"keyDown","unmodifiedText":"a","windowsVirtualKeyCode":65}`},
		{"key up", func() error {
			return v.Key(ctx, KeyEvent{Type: "keyUp", Key: "Enter", Code: "Enter", Modifiers: ModCtrl})
		},
			"Input.dispatchKeyEvent", `{"code":"Enter","key":"Enter","modifiers":2,"type":"keyUp"}`},
		{"paste", func() error { return v.InsertText(ctx, "pässwörd <&>") }, "Input.insertText", `{"text":"pässwörd \u003c\u0026\u003e"}`},
		{"navigate", func() error { return v.Navigate(ctx, "https://form.example/two") }, "Page.navigate", `{"url":"https://form.example/two"}`},
		{"back", func() error { return v.Back(ctx) }, "Page.navigateToHistoryEntry", `{"entryId":1}`},
		{"forward", func() error { return v.Forward(ctx) }, "Page.navigateToHistoryEntry", `{"entryId":2}`},
		{"reload", func() error { return v.Reload(ctx) }, "Page.reload", `{}`},
	}
	for _, st := range steps {
		n := len(fb.got(st.method))
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := fb.got(st.method)
		if len(got) != n+1 {
			t.Fatalf("%s: browser got %d %s; want %d", st.name, len(got), st.method, n+1)
		}
		last := got[len(got)-1]
		if last.SessionID != sid || string(last.Params) != st.want {
			t.Errorf("%s: %s %s on %q; want %s on the view's session %q", st.name, st.method, last.Params, last.SessionID, st.want, sid)
		}
	}
	// The URL the operator navigated to shows in the list (targetInfoChanged).
	testkit.WaitFor(t, 5*time.Second, "navigated URL listed", func() bool {
		for _, ci := range m.op.Clients() {
			for _, ti := range ci.Tabs {
				if ti.ID == page && ti.URL == "https://form.example/two" && ti.Title == ti.URL && ti.Owner == "agent" && !ti.Human {
					return true
				}
			}
		}
		return false
	})
}

// TestClientsTitleSetLater: Chrome announces no title change, so a page its owner stays attached to (no
// flip of "attached" carries a new title either) shows the title its document set later within a poll or two
// of the store page, and the reads that learn it are few and reach no client.
func TestClientsTitleSetLater(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "agent")
	page := c.createTarget("about:blank")
	sess := c.attach(page)
	c.call("Page.navigate", `{"url":"https://late.example/"}`, sess)
	title := func() string {
		for _, ci := range m.op.Clients() {
			for _, ti := range ci.Tabs {
				if ti.ID == page {
					return ti.Title
				}
			}
		}
		return ""
	}
	testkit.WaitFor(t, 2*time.Second, "the navigation's title (its URL)", func() bool { return title() == "https://late.example/" })
	before := len(c.all())
	reads := len(fb.got("Target.getTargets"))
	fb.setTitle(page, "Late title")
	start := time.Now()
	testkit.WaitFor(t, 2*time.Second, "the title the document set", func() bool { return title() == "Late title" })
	elapsed := time.Since(start)
	if n := len(fb.got("Target.getTargets")) - reads; n > int(elapsed/titleEvery)+2 {
		t.Errorf("Clients read the titles %d times in %v; want at most one read every %v", n, elapsed, titleEvery)
	}
	for range 50 {
		m.op.Clients()
	}
	if got := c.all()[before:]; len(got) != 0 {
		t.Errorf("the agent got %d messages while the operator read titles: %s", len(got), got)
	}
}

// TestThumbnail: a thumbnail is the whole viewport (the stripe at its left edge included), scaled here with
// no clip (a clip makes Chrome resize and emulate the page), and comes from a background tab, whose capture
// Chrome answers only once the tab draws another frame (a screencast makes it draw).
func TestThumbnail(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	ctx := testCtx(t)
	c := newClient(t, m, "agent")
	page := c.createTarget("https://shot.example/")
	tests := []struct {
		name              string
		hidden            bool
		maxWidth, quality int
		wantSize          image.Point
		wantQuality       int // asked of Chrome
	}{
		{"scaled", false, 320, 50, image.Pt(320, 180), thumbQuality},
		{"scaled from a background tab", true, 320, 50, image.Pt(320, 180), thumbQuality},
		{"narrower than the limit", false, 2000, 0, image.Pt(fakeWidth, fakeHeight), thumbQuality},
		{"unscaled", true, 0, 70, image.Pt(fakeWidth, fakeHeight), 70},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb.setHidden(tt.hidden)
			before := len(fb.got("Page.captureScreenshot"))
			tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			got, err := m.op.Thumbnail(tctx, page, tt.maxWidth, tt.quality)
			if err != nil {
				t.Fatalf("Thumbnail(%d, %d): %v", tt.maxWidth, tt.quality, err)
			}
			img, err := jpeg.Decode(bytes.NewReader(got))
			if err != nil {
				t.Fatalf("Thumbnail(%d, %d) is no JPEG: %v", tt.maxWidth, tt.quality, err)
			}
			if size := img.Bounds().Size(); size != tt.wantSize {
				t.Errorf("Thumbnail(%d, %d) is %v; want %v", tt.maxWidth, tt.quality, size, tt.wantSize)
			}
			// The stripe fills the left fakeStripe/fakeWidth of the image: its middle is red, the pixel
			// after its end white.
			w := img.Bounds().Dx()
			stripe := w * fakeStripe / fakeWidth
			for _, x := range []int{0, stripe / 2, stripe - 2} {
				if r, g, _, _ := img.At(x, 10).RGBA(); r>>8 < 180 || g>>8 > 70 {
					t.Errorf("Thumbnail(%d, %d) at x=%d is not the red stripe: r=%d g=%d", tt.maxWidth, tt.quality, x, r>>8, g>>8)
				}
			}
			if r, g, _, _ := img.At(stripe+2, 10).RGBA(); r>>8 < 200 || g>>8 < 200 {
				t.Errorf("Thumbnail(%d, %d) at x=%d is not white past the stripe: r=%d g=%d", tt.maxWidth, tt.quality, stripe+2, r>>8, g>>8)
			}
			for _, cp := range fb.got("Page.captureScreenshot")[before:] {
				var p struct {
					Quality int
					Clip    json.RawMessage
				}
				json.Unmarshal(cp.Params, &p)
				if cp.SessionID == "" || p.Clip != nil || p.Quality != tt.wantQuality {
					t.Errorf("capture %s on session %q; want quality %d, no clip, on the operator's session", cp.Params, cp.SessionID, tt.wantQuality)
				}
			}
		})
	}
	fb.setHidden(false)
	testkit.WaitFor(t, 5*time.Second, "thumbnail sessions detached", func() bool { return fb.sessionOf(page) == "" })
	if got := fb.got("Emulation.setDeviceMetricsOverride"); len(got) != 0 {
		t.Errorf("thumbnails emulated device metrics: %v", got)
	}
	if _, err := m.op.Thumbnail(ctx, "NOPE", 100, 0); !errors.Is(err, ErrNoTarget) {
		t.Errorf("Thumbnail(NOPE) error = %v; want ErrNoTarget", err)
	}
}

func TestPageInfo(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	ctx := testCtx(t)
	c := newClient(t, m, "agent")
	page := c.createTarget("https://title.example/")
	title, url, err := m.op.PageInfo(ctx, page)
	// The fake's title is its URL.
	if err != nil || title != "https://title.example/" || url != "https://title.example/" {
		t.Errorf("PageInfo(%s) = %q, %q, %v; want the fake's title and URL", page, title, url, err)
	}
	if got := fb.got("Target.getTargetInfo"); len(got) != 1 || got[0].SessionID == "" {
		t.Errorf("getTargetInfo calls %+v; want one, on the operator's browser session", got)
	}
	if _, _, err := m.op.PageInfo(ctx, "NOPE"); !errors.Is(err, ErrNoTarget) {
		t.Errorf("PageInfo(NOPE) error = %v; want ErrNoTarget", err)
	}
}

func TestHumanTabs(t *testing.T) { forEachTransport(t, testHumanTabs) }

func testHumanTabs(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	var hookMu sync.Mutex
	var persisted map[string][]string
	const grace = 300 * time.Millisecond
	m := startMux(t, fb, Config{TabCap: 1, Grace: grace, Hooks: Hooks{OwnershipChanged: func(o map[string][]string) {
		hookMu.Lock()
		persisted = o
		hookMu.Unlock()
	}}})
	ctx := testCtx(t)

	t.Run("client-human refused", func(t *testing.T) {
		ws, resp, err := dialMux(t, m, "/tok/client-human", nil)
		if err == nil {
			ws.Close()
			t.Fatal("/client-human upgraded")
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "reserved for people using the vibe-browser UI") {
			t.Fatalf("/client-human = %d %q; want 403 naming the rule", resp.StatusCode, body)
		}
	})

	agent := newClient(t, m, "agent")
	a1 := agent.createTarget("https://a1.example/")
	var humans []string
	for i := range 3 { // three human tabs, over a cap of one
		h, err := m.op.NewHumanTab(ctx, fmt.Sprintf("https://login%d.example/", i))
		if err != nil {
			t.Fatalf("NewHumanTab: %v", err)
		}
		humans = append(humans, h)
	}
	a2 := agent.createTarget("https://a2.example/") // the agent's cap closes a1, nothing of the human's
	testkit.WaitFor(t, 5*time.Second, "agent's first tab closed by its cap", func() bool { return !fb.hasTarget(a1) })
	v, err := m.op.View(ctx, humans[0], ViewOptions{})
	if err != nil {
		t.Fatalf("View(human tab): %v", err)
	}
	for _, h := range humans {
		if !fb.hasTarget(h) {
			t.Fatalf("human tab %s closed by a tab cap", h)
		}
	}
	pages := func(ids []string) []string { // the fake's page ids; each page's tab target goes with it
		var out []string
		for _, id := range ids {
			if strings.HasPrefix(id, "PAGE") {
				out = append(out, id)
			}
		}
		return out
	}
	if got := pages(m.Ownership()[HumanClient]); !slices.Equal(got, humans) {
		t.Fatalf("Ownership()[human] = %v; want %v", got, humans)
	}
	testkit.WaitFor(t, 5*time.Second, "human tabs persisted", func() bool {
		hookMu.Lock()
		defer hookMu.Unlock()
		return slices.Equal(pages(persisted[HumanClient]), humans) && slices.Equal(pages(persisted["agent"]), []string{a2})
	})
	var listed []string
	for _, ci := range m.op.Clients() {
		for _, ti := range ci.Tabs {
			if ti.Type == "page" && ti.Human {
				listed = append(listed, ti.ID)
				if ci.ID != HumanClient || ti.Owner != HumanClient || !ci.Connected {
					t.Errorf("human tab %s listed under %s (owner %s, connected %v)", ti.ID, ci.ID, ti.Owner, ci.Connected)
				}
			}
		}
	}
	if !slices.Equal(listed, humans) {
		t.Errorf("Clients() human pages = %v; want %v", listed, humans)
	}
	if err := m.op.CloseHumanTab(a2); !errors.Is(err, ErrNotHumanTab) {
		t.Errorf("CloseHumanTab(agent's tab) = %v; want ErrNotHumanTab", err)
	}
	if err := m.op.CloseHumanTab(humans[2]); err != nil {
		t.Fatalf("CloseHumanTab: %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "human tab closed", func() bool { return !fb.hasTarget(humans[2]) })

	// Watched, the human client runs no grace period; it starts when the last viewer leaves.
	graceOn := func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		cl := m.clients[HumanClient]
		return cl != nil && cl.grace != nil
	}
	if graceOn() {
		t.Fatal("human client in its grace period while a viewer watches its tab")
	}
	v2, err := m.op.View(ctx, humans[1], ViewOptions{})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	v.Close()
	if graceOn() || !fb.hasTarget(humans[0]) {
		t.Fatal("grace started, or a tab closed, while one viewer is left")
	}
	v2.Close()
	left := time.Now()
	if !graceOn() || !fb.hasTarget(humans[0]) || !fb.hasTarget(humans[1]) {
		t.Fatal("after the last viewer left: want the grace period running and the tabs kept")
	}
	testkit.WaitFor(t, 5*time.Second, "human tabs closed after the grace period", func() bool {
		return !fb.hasTarget(humans[0]) && !fb.hasTarget(humans[1])
	})
	if d := time.Since(left); d < grace {
		t.Errorf("human tabs closed %v after the last viewer left; want at least the grace period %v", d, grace)
	}
	if fb.hasTarget(a2) != true {
		t.Error("the agent's tab closed with the human's")
	}
}

func TestViewMaxFPS(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	ctx := testCtx(t)
	c := newClient(t, m, "agent")
	page := c.createTarget("https://fast.example/")
	const fps = 10
	const gap = time.Second / fps
	v, err := m.op.View(ctx, page, ViewOptions{MaxFPS: fps})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	defer v.Close()
	count := func(method string) int { return len(fb.got(method)) }
	next := func(want string) time.Time {
		t.Helper()
		f, err := v.Next(ctx)
		if err != nil || string(f.JPEG) != want {
			t.Fatalf("Next = %q, %v; want %s", f.JPEG, err, want)
		}
		return time.Now()
	}
	last := next("frame-1") // the screencast's first frame
	testkit.WaitFor(t, 5*time.Second, "first frame acknowledged", func() bool { return count("Page.screencastFrameAck") == 1 })

	// The page repaints before the viewer may take the next frame: the screencast stops, so Chrome
	// captures nothing more, and the frame is handed out a gap after the first.
	fb.frame()
	testkit.WaitFor(t, 5*time.Second, "screencast stopped on an early frame", func() bool { return fb.casts() == 0 })
	at := next("frame-2")
	if d := at.Sub(last); d < gap-5*time.Millisecond {
		t.Errorf("second frame handed out %v after the first; want at least %v (MaxFPS %d)", d, gap, fps)
	}
	last = at

	// Taking it starts the screencast again, shortly before the next frame is due; its fresh frame
	// differs (the page is busy), so the screencast stops again at once and nothing is acknowledged.
	testkit.WaitFor(t, 5*time.Second, "screencast started again", func() bool { return count("Page.startScreencast") == 2 })
	testkit.WaitFor(t, 5*time.Second, "stopped after its one fresh frame", func() bool {
		return count("Page.stopScreencast") == 2 && fb.casts() == 0
	})
	at = next("frame-3")
	if d := at.Sub(last); d < gap-5*time.Millisecond {
		t.Errorf("third frame handed out %v after the second; want at least %v", d, gap)
	}
	if n := count("Page.screencastFrameAck"); n != 1 {
		t.Errorf("%d acks while the page was busy; want only the first frame's", n)
	}

	// The page goes still: the next restart's frame equals the last one, so the screencast stays on (it
	// costs nothing until the page changes) and the frame is acknowledged.
	fb.setStill(true)
	next("frame-3")
	testkit.WaitFor(t, 5*time.Second, "a still page's frame acknowledged", func() bool { return count("Page.screencastFrameAck") == 2 })
	if fb.casts() != 1 || count("Page.startScreencast") != 3 || count("Page.stopScreencast") != 2 {
		t.Errorf("still page: %d casts on, %d starts, %d stops; want the screencast left on (1, 3, 2)",
			fb.casts(), count("Page.startScreencast"), count("Page.stopScreencast"))
	}

	// A viewer that takes nothing while the page is busy costs one frame, not a loop of restarts.
	fb.setStill(false)
	fb.frame()
	testkit.WaitFor(t, 5*time.Second, "stopped on the early frame", func() bool { return fb.casts() == 0 && pendingFrame(v) != "" })
	time.Sleep(3 * gap)
	if n := count("Page.startScreencast"); n != 3 {
		t.Errorf("%d screencast starts while the viewer took nothing; want still 3", n)
	}
}

// TabInfo.Moves moves with what can change a tab's pixels (a command of its owner on it, an event of its
// owner's session, a new URL) and stays put for the operator's own looks at it (a thumbnail), so that the
// timeline captures only tabs that moved.
func TestTabMoves(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	ctx := testCtx(t)
	c := newClient(t, m, "agent")
	page := c.createTarget("https://moves.example/")
	sid := c.attach(page)
	moves := func() uint64 {
		for _, ci := range m.Operator().Clients() {
			for _, tab := range ci.Tabs {
				if tab.ID == page {
					return tab.Moves
				}
			}
		}
		t.Fatalf("tab %s not listed", page)
		return 0
	}
	look := func() {
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := m.Operator().Thumbnail(tctx, page, 320, 50); err != nil {
			t.Fatal(err)
		}
	}
	before := moves()
	look()
	if got := moves(); got != before {
		t.Fatalf("a thumbnail moved the tab (%d → %d)", before, got)
	}
	for _, step := range []struct {
		what string
		do   func()
	}{
		{"a command of its owner", func() { c.call("Runtime.evaluate", `{"expression":"1"}`, sid) }},
		{"an event of its owner's session", func() {
			fb.send(`{"method":"Page.loadEventFired","params":{"timestamp":1},"sessionId":"` + sid + `"}`)
		}},
		{"a new URL", func() {
			fb.send(`{"method":"Target.targetInfoChanged","params":{"targetInfo":{"targetId":"` + page +
				`","type":"page","url":"https://moves.example/next","title":"","attached":true}}}`)
		}},
	} {
		was := moves()
		step.do()
		testkit.WaitFor(t, 5*time.Second, step.what+" to move the tab", func() bool { return moves() > was })
	}
	settled := moves()
	look()
	if got := moves(); got != settled {
		t.Fatalf("a thumbnail moved the tab (%d → %d)", settled, got)
	}
}

// ClientTabs lists one client's targets as Clients does, and asks Chrome nothing: the timeline lists a
// client's tabs after each of its calls, and a read of every page's title there was a round trip per call.
func TestClientTabs(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "agent")
	first, second := c.createTarget("https://one.example/"), c.createTarget("https://two.example/")
	other := newClient(t, m, "other")
	other.createTarget("https://other.example/")
	sid := c.attach(first)

	reads := len(fb.got("Target.getTargets"))
	got := m.Operator().ClientTabs("agent")
	c.call("Runtime.evaluate", `{"expression":"2"}`, sid) // after anything the mux sent Chrome before it
	if n := len(fb.got("Target.getTargets")) - reads; n != 0 {
		t.Errorf("ClientTabs asked Chrome for the titles %d times; want none", n)
	}
	var pages []string
	for _, tab := range got {
		if tab.Owner != "agent" {
			t.Errorf("ClientTabs(agent) lists %+v", tab)
		}
		if tab.Type == "page" {
			pages = append(pages, tab.ID)
		}
	}
	if !slices.Equal(pages, []string{first, second}) {
		t.Errorf("ClientTabs(agent) lists the pages %v; want %v", pages, []string{first, second})
	}
	again := m.Operator().ClientTabs("agent")
	for _, ci := range m.Operator().Clients() {
		if ci.ID == "agent" && !reflect.DeepEqual(again, ci.Tabs) {
			t.Errorf("ClientTabs(agent) = %+v; want the agent's tabs as Clients lists them, %+v", again, ci.Tabs)
		}
	}
}
