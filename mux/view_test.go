package mux

import (
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

func TestFrameSession(t *testing.T) {
	for _, tt := range []struct {
		event string
		want  int
	}{
		{`{"method":"Page.screencastFrame","params":{"data":"AAAA","metadata":{"deviceWidth":800},"sessionId":17},"sessionId":"9F3A"}`, 17},
		{`{"sessionId":"9F3A","method":"Page.screencastFrame","params":{"data":"AAAA","sessionId":3}}`, 3},
		{`{"method":"Page.screencastFrame","params":{"data":"AAAA"},"sessionId":"9F3A"}`, 0},
	} {
		if got := frameSession([]byte(tt.event)); got != tt.want {
			t.Errorf("frameSession(%s) = %d; want %d", tt.event, got, tt.want)
		}
	}
}

// TestViewNudgesAQuietPage: a hidden tab composites only when asked, so a view that has had no frame for
// quietNudge asks again (a capture on its own session), and keeps asking while the page stays quiet.
func TestViewNudgesAQuietPage(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	ctx := testCtx(t)
	c := newClient(t, m, "agent")
	page := c.createTarget("https://quiet.example/")
	v, err := m.op.View(ctx, page, ViewOptions{})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	defer v.Close()
	sid := viewSession(m, v)
	nudges := func() int {
		n := 0
		for _, c := range fb.got("Page.captureScreenshot") {
			if c.SessionID == sid {
				n++
			}
		}
		return n
	}
	testkit.WaitFor(t, 5*time.Second, "the nudge at the start and one after a quiet second", func() bool { return nudges() >= 2 })
	testkit.WaitFor(t, 5*time.Second, "another while the page stays quiet", func() bool { return nudges() >= 3 })
	if caps := fb.got("Page.captureScreenshot"); len(caps) != nudges() {
		t.Errorf("%d captures, %d on the view's session; want every nudge on it (invisible to the agent)", len(caps), nudges())
	}
}
