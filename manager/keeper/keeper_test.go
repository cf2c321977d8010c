package keeper

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/mux/cdpwire"
	"vibebrowser/mux/sys/procid"
)

func TestReadyWritesTheIdentity(t *testing.T) {
	h := startKeeper(t)
	id := h.ready()
	ctx := context.Background()
	self, err := procid.Inspect(ctx, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	chrome, err := procid.Inspect(ctx, id.BrowserPID)
	if err != nil {
		t.Fatalf("browser pid %d: %v", id.BrowserPID, err)
	}
	want := Identity{
		Format: Format, Key: "k1", Socket: h.socket(), Profile: h.cfg.Profile,
		KeeperPID: os.Getpid(), KeeperStart: self.Start,
		BrowserPID: id.BrowserPID, BrowserStart: chrome.Start, BrowserPGID: id.BrowserPID,
	}
	if id != want {
		t.Errorf("identity = %+v; want %+v", id, want)
	}
	if id.BrowserPID == os.Getpid() || !strings.Contains(strings.Join(chrome.Cmdline, " "), roleFake) {
		t.Errorf("browser pid %d runs %q; want the fake browser", id.BrowserPID, chrome.Cmdline)
	}
	for path, mode := range map[string]os.FileMode{h.identity(): 0o600, h.socket(): os.ModeSocket | 0o600} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (os.ModeType | os.ModePerm); got != mode {
			t.Errorf("%s mode = %v; want %v", path, got, mode)
		}
	}
	if !h.sawLine("Browser.getVersion") {
		t.Errorf("the fake read %q; want the keeper's Browser.getVersion", h.sent())
	}
}

func TestHello(t *testing.T) {
	h := startKeeper(t)
	id := h.ready()
	c := h.dial()
	want := cdpwire.Hello{Format: Format, PID: os.Getpid(), BrowserPID: id.BrowserPID}
	if c.hello != want {
		t.Errorf("hello = %+v; want %+v", c.hello, want)
	}
	if r := c.call(1, "Browser.getVersion", ""); !strings.Contains(string(r.Result), "FakeChrome") {
		t.Errorf("Browser.getVersion through the keeper = %s; want the fake's product", r.Result)
	}
}

func TestOneClientAtATime(t *testing.T) {
	h := startKeeper(t)
	h.ready()
	first := h.dial()
	first.call(1, "Test.echo", "")

	_, _, _, err := cdpwire.Dial(context.Background(), h.socket())
	if !errors.Is(err, cdpwire.ErrRefused) || !strings.Contains(err.Error(), refusedBusy) {
		t.Fatalf("second Dial = %v; want ErrRefused naming %q", err, refusedBusy)
	}
	if r := first.call(2, "Test.echo", ""); r.Error != nil {
		t.Errorf("the first client after a refusal = %+v; want it served still", r.Error)
	}
	first.leave()
	next := h.dial()
	if r := next.call(1, "Test.echo", ""); r.Error != nil || r.Result == nil {
		t.Errorf("the next client's call = %+v; want an answer", r)
	}
}

func TestStaleSocketIsReplaced(t *testing.T) {
	h := newHarness(t)
	ln, err := net.Listen("unix", h.socket())
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, nobody answers on it: a dead keeper's
	h.start()
	h.ready()
	h.dial().call(1, "Test.echo", "")
}

func TestLiveSocketIsNotTaken(t *testing.T) {
	first := startKeeper(t)
	first.ready()
	second := newHarness(t)
	second.cfg.RunDir = first.cfg.RunDir
	second.start()
	if code := second.waitExit(10 * time.Second); code != exitFailure {
		t.Errorf("a second keeper of the same key exited %d; want %d", code, exitFailure)
	}
	if id, err := ReadIdentity(first.identity()); err != nil || id.KeeperPID != os.Getpid() {
		t.Errorf("the first keeper's identity after the second's try: %+v, %v", id, err)
	}
	first.dial().call(1, "Test.echo", "") // its socket still serves
}

func TestChromiumExitEndsTheKeeper(t *testing.T) {
	tests := []struct {
		name   string
		method string
		params string
		want   int
	}{
		{"exit 0", "Test.exit", `{"code":0}`, 0},
		{"exit 3", "Test.exit", `{"code":3}`, 3},
		{"SIGKILL", "Test.signal", `{"signal":9}`, 128 + 9},
		{"SIGTERM", "Test.signal", `{"signal":15}`, 128 + 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startKeeper(t)
			id := h.ready()
			c := h.dial()
			var helper struct {
				PID int `json:"pid"`
			}
			if err := json.Unmarshal(c.call(1, "Test.spawn", "").Result, &helper); err != nil || helper.PID == 0 {
				t.Fatalf("Test.spawn: %v", err)
			}
			t.Cleanup(func() { syscall.Kill(helper.PID, syscall.SIGKILL) }) // a keeper that failed to kill the group would leave it
			c.write(`{"id":2,"method":"` + tt.method + `","params":` + tt.params + `}`)
			if code := h.waitExit(10 * time.Second); code != tt.want {
				t.Errorf("keeper exit code = %d; want %d", code, tt.want)
			}
			for _, p := range []string{h.socket(), h.identity()} {
				if !gone(p) {
					t.Errorf("%s is still there after the keeper exited", p)
				}
			}
			eventually(t, 5*time.Second, "the fake's helper outlived it", func() bool {
				_, live := procid.Live(context.Background(), helper.PID)
				return !live && !groupLive(id.BrowserPGID)
			})
		})
	}
}

func TestChromiumExitBeforeReady(t *testing.T) {
	h := startKeeper(t, "--exit-at-start=4")
	if code := h.waitExit(10 * time.Second); code != 4 {
		t.Errorf("keeper exit code = %d; want the browser's 4", code)
	}
	if !gone(h.identity()) || !gone(h.socket()) {
		t.Errorf("identity or socket left by a keeper that was never ready")
	}
}

// TestSIGTERMClosesTheBrowser runs the keeper as its own process, so the signal is a real one.
func TestSIGTERMClosesTheBrowser(t *testing.T) {
	h := newHarness(t)
	startKeeperProcess(t, h)
	id := h.ready()
	if id.KeeperPID != h.proc.Process.Pid {
		t.Fatalf("identity's keeper pid = %d; want %d", id.KeeperPID, h.proc.Process.Pid)
	}
	c := h.dial()
	c.call(1, "Test.echo", "")
	if err := h.proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := h.waitExit(10 * time.Second); code != 0 {
		t.Errorf("keeper exit code = %d; want 0 (the fake exits 0 on Browser.close)", code)
	}
	if !h.sawLine("Browser.close") {
		t.Errorf("the fake read %q; want Browser.close", h.sent())
	}
	if !gone(h.identity()) || !gone(h.socket()) {
		t.Errorf("identity or socket left after SIGTERM")
	}
	if groupLive(id.BrowserPGID) {
		t.Errorf("chromium's group %d lives on after the keeper", id.BrowserPGID)
	}
}

// TestKeeperOutlivesItsTerminal: a hangup, and a log whose reader went, end nothing.
func TestKeeperOutlivesItsTerminal(t *testing.T) {
	h := newHarness(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	h.proc = exec.Command(testBinary(t), append([]string{roleKeep}, Command(h.cfg)...)...)
	h.proc.Stdout, h.proc.Stderr = w, w
	h.proc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := h.proc.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		h.proc.Process.Kill()
		h.proc.Wait()
	})
	h.ready()
	r.Close() // the keeper's next log line meets a closed pipe
	if err := h.proc.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	c := h.dial() // logs "client connected"
	c.call(1, "Test.echo", "")
	c.leave() // logs "client disconnected"
	h.dial().call(1, "Test.echo", "")
	if err := h.proc.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("keeper gone after SIGHUP and a closed stderr: %v", err)
	}
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	h := startKeeper(t, "--stubborn")
	id := h.ready()
	h.sigs <- syscall.SIGTERM
	if code := h.waitExit(15 * time.Second); code != 128+9 {
		t.Errorf("keeper exit code = %d; want %d (a browser deaf to Browser.close and SIGTERM is SIGKILLed)", code, 128+9)
	}
	if !h.sawLine("Browser.close") {
		t.Errorf("the fake read %q; want Browser.close first", h.sent())
	}
	if groupLive(id.BrowserPGID) {
		t.Errorf("chromium's group %d lives on", id.BrowserPGID)
	}
}

// TestKeeperKilledTakesTheBrowserDown: the pipe is the browser's lifeline.
func TestKeeperKilledTakesTheBrowserDown(t *testing.T) {
	h := newHarness(t)
	startKeeperProcess(t, h)
	id := h.ready()
	if err := h.proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.waitExit(10 * time.Second)
	h.waitSent("EOF")
	eventually(t, 10*time.Second, "the fake browser outlived its keeper", func() bool {
		_, live := procid.Live(context.Background(), id.BrowserPID)
		return !live
	})
}
