//go:build integration && linux

package chrome

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

// groupMembers lists the live (non-zombie) pids in process group pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(st, ')')
		f := bytes.Fields(st[i+1:])
		if len(f) < 3 || string(f[0]) == "Z" || string(f[0]) == "X" {
			continue
		}
		if g, _ := strconv.Atoi(string(f[2])); g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// launchChromium launches the real Chromium headless on a fresh profile and stops it at cleanup.
func launchChromium(t *testing.T, profile string) *Process {
	t.Helper()
	bin, err := Find(os.Getenv("VIBE_CHROME"))
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	if profile == "" {
		profile = filepath.Join(t.TempDir(), "profile")
	}
	p, err := Launch(context.Background(), Options{
		Transport:    TransportPort,
		Binary:       bin,
		ProfileDir:   profile,
		Headless:     true,
		NoSandbox:    os.Geteuid() == 0,
		ReadyTimeout: 60 * time.Second,
		Log:          testkit.Log(t),
	})
	if err != nil {
		t.Fatalf("Launch(chromium): %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("cleanup Stop: %v", err)
		}
	})
	return p
}

// noOmniboxWebUI fails when the headless browser loads the omnibox's WebUI popups, which Chromium 156
// preloads about 0.9 s after its launch unless they are turned off (headlessDisabledFeatures).
func noOmniboxWebUI(t *testing.T, endpoint string) {
	t.Helper()
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(endpoint + "/json/list")
		if err != nil {
			t.Fatalf("GET %s/json/list: %v", endpoint, err)
		}
		var targets []struct{ Type, URL string }
		err = json.NewDecoder(resp.Body).Decode(&targets)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("/json/list: %v", err)
		}
		for _, tg := range targets {
			if strings.HasPrefix(tg.URL, "chrome://omnibox-popup") {
				t.Fatalf("the headless browser loaded %s (%s): its omnibox WebUI is not turned off", tg.URL, tg.Type)
			}
		}
	}
}

func TestChromiumLaunchAdoptStop(t *testing.T) {
	p := launchChromium(t, "")
	resp, err := http.Get(p.HTTPEndpoint() + "/json/version")
	if err != nil {
		t.Fatalf("GET %s/json/version: %v", p.HTTPEndpoint(), err)
	}
	var v struct {
		WS string `json:"webSocketDebuggerUrl"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || v.WS != p.WSEndpoint() {
		t.Fatalf("/json/version = %+v, %v; want webSocketDebuggerUrl %s", v, err, p.WSEndpoint())
	}
	noOmniboxWebUI(t, p.HTTPEndpoint())
	prefs, err := os.ReadFile(filepath.Join(p.ProfileDir(), "Default", "Preferences"))
	if err != nil || !bytes.Contains(prefs, []byte(`"restore_on_startup"`)) {
		t.Errorf("Preferences lack restore_on_startup: %v", err)
	}

	a, err := Adopt(context.Background(), p.PID(), p.StartTime(), p.ProfileDir(), testkit.Log(t))
	if err != nil {
		t.Fatalf("Adopt(pid %d, start %d) = %v", p.PID(), p.StartTime(), err)
	}
	defer a.Release()
	if !a.Adopted() || a.WSEndpoint() != p.WSEndpoint() {
		t.Errorf("Adopt = {adopted %v ws %s}; want adopted, ws %s", a.Adopted(), a.WSEndpoint(), p.WSEndpoint())
	}
	if _, err := Adopt(context.Background(), p.PID(), p.StartTime()+10, p.ProfileDir(), testkit.Log(t)); !errors.Is(err, ErrNotAdoptable) {
		t.Errorf("Adopt with a wrong start time = %v; want ErrNotAdoptable", err)
	}

	members := groupMembers(t, p.PID())
	if len(members) < 2 {
		t.Logf("process group %d has only %v", p.PID(), members)
	}
	begin := time.Now()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	took := time.Since(begin)
	if left := groupMembers(t, p.PID()); len(left) > 0 {
		t.Errorf("group %d still has %v after Stop (had %v)", p.PID(), left, members)
	}
	if took > closeBound+termBound+killBound {
		t.Errorf("Stop took %s; want within %s", took, closeBound+termBound+killBound)
	}
	t.Logf("Stop took %s; group had %d processes", took, len(members))
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Error("adopted Done() not closed after the browser stopped")
	}

	// The same profile launches again: the stopped browser's Singleton files do not block it.
	q := launchChromium(t, p.ProfileDir())
	if q.PID() == p.PID() {
		t.Errorf("relaunch reused pid %d", q.PID())
	}
}

func TestChromiumDoneOnKill9(t *testing.T) {
	p := launchChromium(t, "")
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done() not closed after kill -9")
	}
	testkit.WaitFor(t, 10*time.Second, "the group to be gone", func() bool { return len(groupMembers(t, p.PID())) == 0 })
}

func TestChromiumStopWhenCloseHangs(t *testing.T) {
	p := launchChromium(t, "")
	members := groupMembers(t, p.PID())
	// A stopped browser neither answers Browser.close nor acts on SIGTERM: only SIGKILL ends it.
	if err := syscall.Kill(p.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	took := time.Since(begin)
	if bound := closeBound + termBound + killBound; took > bound {
		t.Errorf("Stop of a hung browser took %s; want within %s", took, bound)
	}
	if took < closeBound {
		t.Errorf("Stop of a hung browser took %s; it cannot have been a graceful close", took)
	}
	if left := groupMembers(t, p.PID()); len(left) > 0 {
		t.Errorf("group %d still has %v after Stop (had %v)", p.PID(), left, members)
	}
}

func TestChromiumHeldProfileRefused(t *testing.T) {
	p := launchChromium(t, "")
	bin, err := Find(os.Getenv("VIBE_CHROME"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Launch(context.Background(), Options{Transport: TransportPort, Binary: bin, ProfileDir: p.ProfileDir(), Headless: true, NoSandbox: os.Geteuid() == 0, Log: testkit.Log(t)})
	var inUse *ProfileInUseError
	if !errors.As(err, &inUse) || inUse.PID != p.PID() {
		t.Fatalf("second Launch on a running profile = %v; want ProfileInUseError naming pid %d", err, p.PID())
	}
	if holder, held := ProfileHolder(p.ProfileDir()); !held || holder != p.PID() {
		t.Errorf("ProfileHolder() = %d, %v; want %d, true", holder, held, p.PID())
	}
}
