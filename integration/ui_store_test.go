//go:build integration

package integration

import (
	"path/filepath"
	"testing"
	"time"
)

// stripesPage is a wide page (2:1) with a stripe of its own colour along each edge, each 6% of the
// viewport: a thumbnail that shows the whole viewport shows every stripe whole.
const stripesPage = `data:text/html,<title>Stripes</title><style>body{margin:0;background:white}
div{position:fixed}%23l{left:0;top:0;bottom:0;width:6vw;background:rgb(255,0,0)}
%23r{right:0;top:0;bottom:0;width:6vw;background:rgb(0,0,255)}
%23t{left:6vw;right:6vw;top:0;height:6vh;background:rgb(255,200,0)}
%23b{left:6vw;right:6vw;bottom:0;height:6vh;background:rgb(0,160,0)}</style>
<div id=l></div><div id=r></div><div id=t></div><div id=b></div>`

// TestWebUIStorePageLiveThumbnailWhole: a store page open while an agent opens a tab lists it within
// liveWithin, and its thumbnail is the tab's whole viewport, scaled into the card: a wide page's edge
// stripes all show, whole (object-fit cover cut "Orders" at a wide tab's left edge to "rders").
func TestWebUIStorePageLiveThumbnailWhole(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	m.cli("store", "add", "Acme Shop")
	m.cli("browser", "start", "acme-shop")
	m.cli("task", "set", taskA, "--store", "acme-shop", "--status", "running")
	login := uiLogin(t, m)
	page := startNodeScript(t, "ui_store.js", login.URL, "/store/acme-shop")
	page.expect("ready")

	agent := dialRaw(t, m.storeWS("acme-shop", taskA))
	var ct struct{ TargetID string }
	opened := time.Now()
	agent.must("Target.createTarget", map[string]any{"url": stripesPage}, "", &ct)
	var at struct{ SessionID string }
	agent.must("Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true}, "", &at)
	// Wider than the card's 16:10: a thumbnail cropped to fill the card loses the side stripes.
	agent.must("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1200, "height": 600,
		"deviceScaleFactor": 1, "mobile": false}, at.SessionID, nil)

	page.send("wait-tab " + ct.TargetID + " 2")
	got := page.expect("tab")
	if took := time.Since(opened); took > liveWithin+15*time.Second || got["listed"].(float64) > float64(liveWithin/time.Millisecond) {
		t.Errorf("the open store page listed the new tab after %v ms; want within %v", got["listed"], liveWithin)
	}
	natural := got["natural"].([]any)
	if w, h := natural[0].(float64), natural[1].(float64); w < 1.9*h || w > 2.1*h {
		t.Fatalf("the thumbnail is %vx%v; want the tab's 2:1 viewport (the override did not take)", w, h)
	}
	pic, size := got["picture"].([]any), got["size"].([]any)
	width, height := pic[2].(float64), pic[3].(float64)
	// Scaled into the card whole: as wide as the card, at the tab's aspect, the rest letterbox.
	if width < size[0].(float64)-4 || height < 1 || width/height < 1.9 || width/height > 2.1 {
		t.Errorf("the card (%vx%v) shows the picture at %v; want all of its 2:1, as wide as the card", size[0], size[1], pic)
	}
	// Each stripe is 6% of its side; JPEG and scaling blur an edge by a pixel or two.
	for _, edge := range []struct {
		name string
		side float64
	}{{"left", width}, {"right", width}, {"top", height}, {"bottom", height}} {
		if run := got[edge.name].(float64); run < 0.045*edge.side || run > 0.075*edge.side {
			t.Errorf("the thumbnail's %s stripe shows %v px of a %v px picture; want its whole 6%% (%.0f px)",
				edge.name, run, edge.side, 0.06*edge.side)
		}
	}
	t.Logf("thumbnail as drawn %v, picture %v, stripes l %v r %v t %v b %v", got["size"], pic, got["left"], got["right"], got["top"], got["bottom"])
	shot := filepath.Join(t.TempDir(), "store-live.png")
	page.send("shot " + shot)
	wantReadable(t, page.expect("shot"), 1280)
	keepScreenshot(t, shot, "store-live.png")
	page.send("close")
	page.expect("closed")
	page.wait()
}
