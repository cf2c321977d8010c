package ui

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux"
)

// TestLiveViewAsksPageInfoOnNavigation: the live view asks the browser for the tab's title and URL when it
// starts and when a frame says the page navigated (and every metaEvery, here never), not before every frame;
// a browser slow to answer holds no frame back.
func TestLiveViewAsksPageInfoOnNavigation(t *testing.T) {
	every := metaEvery
	metaEvery = time.Hour
	t.Cleanup(func() { metaEvery = every })
	u, fb := storeUI(t)
	cookie := u.login(t)
	c, _, err := dialTab(t, u, "T1", http.Header{"Cookie": {cookie}, "Origin": {"http://" + u.host}})
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := readView(t, c)
	if meta.Title != "now Orders" {
		t.Errorf("first metadata title %q; want the browser's answer %q", meta.Title, "now Orders")
	}
	calls := func() int {
		fb.mu.Lock()
		defer fb.mu.Unlock()
		return fb.infoCalls
	}
	fb.mu.Lock()
	v := fb.views[len(fb.views)-1]
	gate := make(chan struct{})
	fb.infoGate = gate // from now on the browser is slow to answer
	fb.mu.Unlock()
	frame := func(navigations int) {
		t.Helper()
		v.frames <- mux.Frame{JPEG: []byte("\xff\xd8next"), DeviceWidth: 800, DeviceHeight: 600, Navigations: navigations}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			typ, b, err := c.ReadMessage()
			if err != nil {
				t.Fatalf("read the live view: %v", err)
			}
			if typ == websocket.BinaryMessage && string(b) == "\xff\xd8next" {
				return
			}
		}
	}
	for range 10 {
		frame(0)
	}
	if n := calls(); n != 1 {
		t.Errorf("PageInfo asked %d times for the first metadata and 10 frames of a page that did not navigate; want once", n)
	}
	frame(1) // the page navigated: asked now, and the frame goes out while the browser thinks
	testkit.WaitFor(t, 5*time.Second, "PageInfo asked after the navigation", func() bool { return calls() == 2 })
	frame(1)
	fb.mu.Lock()
	fb.clients[0].Tabs[0].Title = "Moved"
	fb.mu.Unlock()
	close(gate)
	readUntil(t, c, "the metadata with the new title", func(typ string, b []byte) bool {
		var m viewMeta
		return typ == "meta" && json.Unmarshal(b, &m) == nil && m.Title == "now Moved"
	})
	if n := calls(); n != 2 {
		t.Errorf("PageInfo asked %d times; want twice (the start, the navigation)", n)
	}
}
