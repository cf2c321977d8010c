//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/mux"
)

// centreColour decodes a JPEG and returns its size and the colour at its centre, in 8 bits a channel.
func centreColour(t *testing.T, b []byte) (image.Point, [3]int) {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode JPEG (%d bytes): %v", len(b), err)
	}
	r := img.Bounds()
	cr, cg, cb, _ := img.At(r.Min.X+r.Dx()/2, r.Min.Y+r.Dy()/2).RGBA()
	return r.Size(), [3]int{int(cr >> 8), int(cg >> 8), int(cb >> 8)}
}

// near reports whether a JPEG's colour is within its compression noise of want.
func near(got, want [3]int) bool {
	for i := range got {
		if d := got[i] - want[i]; d < -16 || d > 16 {
			return false
		}
	}
	return true
}

// TestOperatorScreencastRealPixels watches an agent's page of one known colour through the operator API
// in a real Chromium, and a human tab of another: frames and thumbnails show those colours, and the agent
// sees neither the operator's sessions nor the human tab.
func TestOperatorScreencastRealPixels(t *testing.T) {
	t.Parallel()
	chr := startChromium(t)
	m := startMuxOn(t, chr.HTTP, mux.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	teal := [3]int{20, 160, 220}

	// frameOf waits for a frame of colour want.
	frameOf := func(v *mux.View, want [3]int) {
		t.Helper()
		var last [3]int
		for n := 0; ; n++ { // the first frames may predate the page's paint
			fctx, done := context.WithTimeout(ctx, 10*time.Second)
			f, err := v.Next(fctx)
			done()
			if err != nil {
				t.Fatalf("Next after %d frames (last colour %v; want %v): %v", n, last, want, err)
			}
			size, c := centreColour(t, f.JPEG)
			if near(c, want) {
				if size.X > 400 || f.DeviceWidth == 0 {
					t.Errorf("frame %v, device width %v; want at most 400 px wide and a device width", size, f.DeviceWidth)
				}
				t.Logf("frame %d: %v px, colour %v, device %vx%v", n, size, c, f.DeviceWidth, f.DeviceHeight)
				return
			}
			last = c
		}
	}
	agent := dialRaw(t, m.WSBase+"/client-agent")
	agent.must("Target.setDiscoverTargets", map[string]any{"discover": true}, "", nil)
	var ct struct{ TargetID string }
	agent.must("Target.createTarget", map[string]any{"background": true,
		"url": "data:text/html,<body style='margin:0;background:rgb(20,160,220)'></body>"}, "", &ct)
	// A second page the agent never attaches to: Chrome's "attached" flips for it would give the operator away.
	var quiet struct{ TargetID string }
	agent.must("Target.createTarget", map[string]any{"background": true, "url": "data:text/html,<body style='background:rgb(20,160,220)'></body>"}, "", &quiet)
	agentTargets := agent.targetIDs(true)
	slices.Sort(agentTargets) // Chrome lists the most recently used first
	if _, err := m.Operator().Thumbnail(ctx, quiet.TargetID, 100, 50); err != nil {
		t.Fatalf("Thumbnail(quiet page): %v", err)
	}
	if v, err := m.Operator().View(ctx, quiet.TargetID, mux.ViewOptions{MaxWidth: 400}); err != nil {
		t.Fatalf("View(quiet page): %v", err)
	} else {
		frameOf(v, teal)
		v.Close()
	}

	watch := func(target string, want [3]int, repaint func(rgb string), then [3]int) {
		t.Helper()
		v, err := m.Operator().View(ctx, target, mux.ViewOptions{MaxWidth: 400, MaxHeight: 300, Quality: 80})
		if err != nil {
			t.Fatalf("View(%s): %v", target, err)
		}
		defer v.Close()
		frameOf(v, want)
		repaint(fmt.Sprintf("rgb(%d,%d,%d)", then[0], then[1], then[2]))
		frameOf(v, then) // the live view follows the page
		want = then
		var c [3]int
		var size image.Point
		for range 50 { // a thumbnail of a page still painting may show white
			jpg, err := m.Operator().Thumbnail(ctx, target, 200, 80)
			if err != nil {
				t.Fatalf("Thumbnail(%s): %v", target, err)
			}
			if size, c = centreColour(t, jpg); near(c, want) {
				break
			}
		}
		if !near(c, want) || size.X > 200 {
			t.Fatalf("Thumbnail(%s) = %v px of colour %v; want at most 200 px of %v", target, size, c, want)
		}
		t.Logf("thumbnail: %v px, colour %v", size, c)
	}
	var at struct{ SessionID string }
	agent.must("Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true}, "", &at)
	// What the page could notice of being watched: visibility, size, focus.
	agent.must("Runtime.evaluate", map[string]any{"expression": `window.seen = [document.visibilityState + ' ' + innerWidth + 'x' + innerHeight];
		for (const e of ['visibilitychange', 'resize', 'focus', 'blur']) addEventListener(e, () => seen.push(e + ' ' + document.visibilityState + ' ' + innerWidth + 'x' + innerHeight), true)`}, at.SessionID, nil)
	violet := [3]int{140, 60, 200}
	watch(ct.TargetID, teal, func(rgb string) { // the agent repaints its own page
		agent.must("Runtime.evaluate", map[string]any{"expression": "document.body.style.background='" + rgb + "'"}, at.SessionID, nil)
	}, violet)
	var seen struct{ Result struct{ Value string } }
	agent.must("Runtime.evaluate", map[string]any{"expression": "JSON.stringify(seen)"}, at.SessionID, &seen)
	if strings.Count(seen.Result.Value, `"`) != 2 {
		t.Errorf("the watched page noticed %s; want only its first state", seen.Result.Value)
	}
	t.Logf("the watched page saw %s", seen.Result.Value)
	watch(ct.TargetID, violet, func(rgb string) { // the agent navigates
		agent.must("Page.navigate", map[string]any{"url": "data:text/html,<body style='margin:0;background:" + rgb + "'></body>"}, at.SessionID, nil)
	}, teal)

	orange := [3]int{240, 120, 20}
	h, err := m.Operator().NewHumanTab(ctx, "data:text/html,<body style='margin:0;background:rgb(240,120,20)'></body>")
	if err != nil {
		t.Fatalf("NewHumanTab: %v", err)
	}
	var hv *mux.View
	watch(h, orange, func(rgb string) { // the person navigates
		if hv, err = m.Operator().View(ctx, h, mux.ViewOptions{}); err != nil {
			t.Fatalf("View: %v", err)
		}
		defer hv.Close()
		if err := hv.Navigate(ctx, "data:text/html,<body style='margin:0;background:"+rgb+"'></body>"); err != nil {
			t.Fatalf("Navigate: %v", err)
		}
	}, violet)
	if got := agent.targetIDs(true); !slices.Equal(slices.Sorted(slices.Values(got)), agentTargets) {
		t.Errorf("agent getTargets with a human tab = %v; want %v", got, agentTargets)
	}
	if err := m.Operator().CloseHumanTab(h); err != nil {
		t.Fatalf("CloseHumanTab: %v", err)
	}
	for _, e := range agent.Events("") {
		switch e.Method {
		case "Target.attachedToTarget", "Target.detachedFromTarget":
			if !bytes.Contains(e.Params, []byte(at.SessionID)) {
				t.Errorf("agent got %s %s: not its own session", e.Method, e.Params)
			}
		case "Target.targetCreated", "Target.targetInfoChanged", "Target.targetDestroyed":
			if bytes.Contains(e.Params, []byte(h)) {
				t.Errorf("agent got %s of the human tab: %s", e.Method, e.Params)
			}
			if bytes.Contains(e.Params, []byte(quiet.TargetID)) && bytes.Contains(e.Params, []byte(`"attached":true`)) {
				t.Errorf("agent got %s saying its unattached page is attached: %s", e.Method, e.Params)
			}
		default:
			if e.SessionID != at.SessionID {
				t.Errorf("agent got %s on session %q", e.Method, e.SessionID)
			}
		}
	}
}
