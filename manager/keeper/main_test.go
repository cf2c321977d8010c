package keeper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"vibebrowser/manager/netid"
	"vibebrowser/mux/cdpwire"
	"vibebrowser/mux/sys/procid"
)

// TestMain is also the fake browser, the keeper as a process and the fake's helper: the test binary run
// again with a role as its first argument.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case roleFake:
			os.Exit(fakeBrowser(os.Args[2:]))
		case roleKeep:
			os.Exit(Main(os.Args[2:]))
		case roleHelper:
			time.Sleep(time.Hour) // killed with the fake's group
			os.Exit(0)
		}
	}
	goleak.VerifyTestMain(m)
}

// testBinary is this test binary, which plays the fake browser.
func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// harness is one keeper of a fake browser, in this process (run) or as its own (Main).
type harness struct {
	t       *testing.T
	cfg     Config
	methods string // the fake's log of what it read

	sigs chan os.Signal // in process: the keeper's signals
	code chan int       // in process: run's exit code

	proc *exec.Cmd // as a process
	plog string    // as a process: its stderr
}

// newHarness makes the keeper's Config for a fake browser with the fake's extra flags.
func newHarness(t *testing.T, fakeFlags ...string) *harness {
	t.Helper()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	profile := filepath.Join(dir, "profile")
	for _, d := range []string{run, profile} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{t: t, methods: filepath.Join(dir, "methods.log")}
	args := append([]string{roleFake, "--remote-debugging-pipe", "--user-data-dir=" + profile, "--log=" + h.methods}, fakeFlags...)
	h.cfg = Config{Key: "k1", RunDir: run, Profile: profile, Binary: testBinary(t), Args: args}
	return h
}

// startKeeper runs a keeper of a fake browser in this process; the test's cleanup stops it.
func startKeeper(t *testing.T, fakeFlags ...string) *harness {
	t.Helper()
	h := newHarness(t, fakeFlags...)
	h.start()
	return h
}

// start runs the harness's keeper in this process; the test's cleanup stops it.
func (h *harness) start() {
	t := h.t
	t.Helper()
	cfg, err := parseArgs(Command(h.cfg)) // what Main would run
	if err != nil {
		t.Fatal(err)
	}
	h.sigs, h.code = make(chan os.Signal, 1), make(chan int, 1)
	log := zerolog.New(zerolog.NewTestWriter(t)).With().Str("component", "keeper").Logger()
	go func() { h.code <- run(cfg, netid.Proxy{}, log, h.sigs) }()
	t.Cleanup(func() {
		select {
		case h.sigs <- syscall.SIGTERM:
		default:
		}
		select {
		case code := <-h.code:
			h.code <- code
		case <-time.After(20 * time.Second):
			t.Errorf("keeper still running 20s after SIGTERM")
		}
	})
}

// startKeeperProcess runs `keep` (Main) as its own process, as the manager does.
func startKeeperProcess(t *testing.T, h *harness) {
	t.Helper()
	h.plog = filepath.Join(filepath.Dir(h.methods), "keeper.log")
	lf, err := os.Create(h.plog)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	h.proc = exec.Command(testBinary(t), append([]string{roleKeep}, Command(h.cfg)...)...)
	h.proc.Stdout, h.proc.Stderr = lf, lf
	h.proc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := h.proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if h.proc.ProcessState == nil {
			h.proc.Process.Kill()
			h.proc.Wait()
		}
		if t.Failed() || os.Getenv("KEEPER_TEST_LOG") != "" {
			b, _ := os.ReadFile(h.plog)
			t.Logf("keeper's log:\n%s", b)
		}
	})
}

// waitExit waits for the keeper's exit code.
func (h *harness) waitExit(within time.Duration) int {
	h.t.Helper()
	if h.proc != nil {
		done := make(chan error, 1)
		go func() { done <- h.proc.Wait() }()
		select {
		case <-done:
			return exitStatus(h.proc.ProcessState)
		case <-time.After(within):
			h.t.Fatalf("keeper still running after %s", within)
		}
	}
	select {
	case code := <-h.code:
		h.code <- code
		return code
	case <-time.After(within):
		h.t.Fatalf("keeper still running after %s", within)
	}
	return -1
}

func (h *harness) socket() string   { return SocketPath(h.cfg.RunDir, h.cfg.Key) }
func (h *harness) identity() string { return IdentityPath(h.cfg.RunDir, h.cfg.Key) }

// ready waits for the identity file, the keeper's readiness.
func (h *harness) ready() Identity {
	h.t.Helper()
	var id Identity
	eventually(h.t, 20*time.Second, "no identity file", func() bool {
		var err error
		id, err = ReadIdentity(h.identity())
		return err == nil
	})
	return id
}

// sent returns the lines of the fake's log: what the keeper sent it.
func (h *harness) sent() []string {
	b, _ := os.ReadFile(h.methods)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// sawLine reports whether the fake read a command whose line starts with prefix.
func (h *harness) sawLine(prefix string) bool {
	for _, l := range h.sent() {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// waitSent waits until the fake has read a command whose line starts with prefix.
func (h *harness) waitSent(prefix string) {
	h.t.Helper()
	eventually(h.t, 10*time.Second, fmt.Sprintf("the fake never read %q; it read %q", prefix, h.sent()), func() bool { return h.sawLine(prefix) })
}

// testClient is a client of the keeper's socket.
type testClient struct {
	t     *testing.T
	nc    *net.UnixConn
	pipe  *cdpwire.Pipe
	br    *bufio.Reader // reads the pipe
	hello cdpwire.Hello
	once  sync.Once
}

// dial connects to the keeper and takes the pipe it lends, waiting (bounded) for the keeper to take it back
// from a client that went. As the mux does, the client gives the pipe back when the keeper closes its side.
func (h *harness) dial() *testClient {
	h.t.Helper()
	c := h.dialKeeping()
	go func() {
		io.Copy(io.Discard, c.nc)
		c.leave()
	}()
	return c
}

// dialKeeping is dial for a client that keeps the pipe when the keeper asks for it back.
func (h *harness) dialKeeping() *testClient {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, hello, pipe, err := cdpwire.Dial(ctx, h.socket())
	if err != nil {
		h.t.Fatalf("Dial(%s): %v", h.socket(), err)
	}
	c := &testClient{t: h.t, nc: nc, pipe: pipe, br: bufio.NewReader(pipe.FromBrowser), hello: hello}
	h.t.Cleanup(c.leave)
	if hello.Skip {
		pipe.FromBrowser.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := cdpwire.SkipRest(c.br); err != nil {
			h.t.Fatalf("the rest of the message the keeper stopped inside: %v", err)
		}
	}
	return c
}

// leave gives the pipe back, as a client does: its ends closed, then the connection.
func (c *testClient) leave() {
	c.once.Do(func() {
		c.pipe.Close()
		c.nc.Close()
	})
}

// write writes the messages in one write, each NUL-ended.
func (c *testClient) write(msgs ...string) {
	c.t.Helper()
	var b []byte
	for _, m := range msgs {
		b = append(append(b, m...), 0)
	}
	if _, err := c.pipe.ToBrowser.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read reads the next message.
func (c *testClient) read() []byte {
	c.t.Helper()
	c.pipe.FromBrowser.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, _, err := cdpwire.ReadMessage(c.br, 512<<20)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return m
}

// reply is what tests look at in a message from the keeper.
type reply struct {
	ID     *int64          `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

func decodeReply(t *testing.T, m []byte) reply {
	t.Helper()
	var r reply
	if err := json.Unmarshal(m, &r); err != nil {
		t.Fatalf("message %.200q: %v", m, err)
	}
	return r
}

// until reads messages until the answer to id, returning it and what came before it.
func (c *testClient) until(id int64) (reply, []reply) {
	c.t.Helper()
	var before []reply
	for {
		r := decodeReply(c.t, c.read())
		if r.ID != nil && *r.ID == id {
			return r, before
		}
		before = append(before, r)
	}
}

// call sends one command and returns its answer.
func (c *testClient) call(id int64, method, params string) reply {
	c.t.Helper()
	msg := `{"id":` + strconv.FormatInt(id, 10) + `,"method":"` + method + `"`
	if params != "" {
		msg += `,"params":` + params
	}
	c.write(msg + "}")
	r, _ := c.until(id)
	return r
}

// groupLive reports whether any process of group pgid is alive; a zombie is gone (PID 1 here reaps late).
func groupLive(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
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
		if len(f) < 3 || string(f[2]) != strconv.Itoa(pgid) {
			continue
		}
		if _, live := procid.Live(context.Background(), pid); live {
			return true
		}
	}
	return false
}

// gone reports whether a path no longer exists.
func gone(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, os.ErrNotExist)
}
