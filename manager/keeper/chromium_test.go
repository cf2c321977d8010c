package keeper

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

const chromiumPath = "/usr/bin/chromium"

// TestRealChromium lends a real Chromium's pipe: a client creates and attaches a target and goes half-way
// through a message; Chromium takes the keeper's NUL after the fragment in its stride, and the next client
// finds the target still attached (Chromium keeps one connection on its pipe), detaches its one session by
// the target's id, as the mux does when it takes a pipe, and is told when none is left. SIGTERM takes the
// whole group down.
func TestRealChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no %s: %v", chromiumPath, err)
	}
	dir := t.TempDir()
	h := &harness{t: t, methods: filepath.Join(dir, "unused.log")}
	run, profile := filepath.Join(dir, "run"), filepath.Join(dir, "profile")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	h.cfg = Config{Key: "real", RunDir: run, Profile: profile, Binary: chromiumPath, Args: append(testkit.HeadlessChromiumArgs(profile), "--remote-debugging-pipe", "about:blank")}
	startKeeperProcess(t, h)
	id := h.ready()

	first := h.dial()
	if r := first.call(1, "Browser.getVersion", ""); !strings.Contains(string(r.Result), "Chrome") {
		t.Fatalf("Browser.getVersion = %s %+v; want Chrome's product", r.Result, r.Error)
	}
	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := json.Unmarshal(first.call(2, "Target.createTarget", `{"url":"about:blank"}`).Result, &created); err != nil || created.TargetID == "" {
		t.Fatalf("Target.createTarget: %v", err)
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	first.write(`{"id":3,"method":"Target.attachToTarget","params":{"targetId":"` + created.TargetID + `","flatten":true}}`)
	if r, _ := first.until(3); json.Unmarshal(r.Result, &attached) != nil || attached.SessionID == "" {
		t.Fatalf("Target.attachToTarget = %s %+v; want a session", r.Result, r.Error)
	}
	first.write(`{"id":4,"method":"Runtime.evaluate","params":{"expression":"1+`) // …and NUL-ended by the keeper
	first.leave()

	next := h.dial()
	attachedNow := func() bool {
		var targets struct {
			TargetInfos []struct {
				TargetID string `json:"targetId"`
				Attached bool   `json:"attached"`
			} `json:"targetInfos"`
		}
		if err := json.Unmarshal(next.call(1, "Target.getTargets", "").Result, &targets); err != nil {
			t.Fatal(err)
		}
		for _, ti := range targets.TargetInfos {
			if ti.TargetID == created.TargetID {
				return ti.Attached
			}
		}
		t.Fatalf("Target.getTargets = %+v; want the first client's target %s", targets, created.TargetID)
		return false
	}
	if !attachedNow() {
		t.Errorf("target %s detached when its client went; want it attached until the next client detaches it", created.TargetID)
	}
	byTarget := `{"targetId":"` + created.TargetID + `"}`
	if r := next.call(2, "Target.detachFromTarget", byTarget); r.Error != nil {
		t.Errorf("Target.detachFromTarget by target id = %+v; want the first client's session detached", r.Error)
	}
	if r := next.call(3, "Target.detachFromTarget", byTarget); r.Error == nil {
		t.Errorf("a second Target.detachFromTarget by target id answered %s; want an error: no session left", r.Result)
	}
	if attachedNow() {
		t.Errorf("target %s still attached after its session was detached by target id", created.TargetID)
	}

	if err := h.proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := h.waitExit(15 * time.Second); code != 0 {
		t.Errorf("keeper exit code after SIGTERM = %d; want Chromium's 0 after Browser.close", code)
	}
	eventually(t, 5*time.Second, "a process of chromium's group outlived the keeper", func() bool { return !groupLive(id.BrowserPGID) })
	if !gone(h.socket()) || !gone(h.identity()) {
		t.Errorf("socket or identity file left after SIGTERM")
	}
}
