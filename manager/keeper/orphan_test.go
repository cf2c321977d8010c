package keeper

import (
	"testing"
	"time"
)

// With --orphan-stop the keeper stops Chromium (Browser.close) once it has been without a client that long
// (SPEC §19: a browser must not outlive its manager past the store's lease), and not while a client holds
// the pipe, nor when a new client comes in time. Without it, the keeper waits for the next manager.
func TestOrphanStop(t *testing.T) {
	const orphan = 600 * time.Millisecond
	tests := []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"no client ever", func(t *testing.T, h *harness) {}},
		{"after its client left", func(t *testing.T, h *harness) {
			c := h.dial()
			time.Sleep(2 * orphan) // held: no stop while the client keeps the pipe
			if h.sawLine("Browser.close") {
				t.Fatal("the keeper closed the browser while a client held the pipe")
			}
			c.leave()
		}},
		{"a client back in time", func(t *testing.T, h *harness) {
			for range 4 {
				c := h.dial()
				c.leave()
				time.Sleep(orphan / 2)
			}
			if h.sawLine("Browser.close") {
				t.Fatal("the keeper closed the browser though each client came back within --orphan-stop")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.cfg.OrphanStop = orphan
			h.start()
			h.ready()
			tt.run(t, h)
			left := time.Now()
			h.waitExit(10 * time.Second)
			if d := time.Since(left); d < orphan/2 {
				t.Errorf("the keeper stopped %s after its last client; want about --orphan-stop (%s)", d, orphan)
			}
			if !h.sawLine("Browser.close") {
				t.Errorf("the fake read %q; want Browser.close, as at SIGTERM", h.sent())
			}
		})
	}

	t.Run("off", func(t *testing.T) {
		h := startKeeper(t)
		h.ready()
		h.dial().leave()
		time.Sleep(3 * orphan)
		select {
		case code := <-h.code:
			t.Fatalf("a keeper without --orphan-stop exited (%d) with no client", code)
		default:
		}
	})
}
