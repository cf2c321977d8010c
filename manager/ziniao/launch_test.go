package ziniao

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/fakeziniao"
	"vibebrowser/mux/errdefs"
)

// fakeClientEnv makes the test binary a stand-in Ziniao client: it serves an empty getBrowserList on its
// --port until SIGTERM, and writes its pid to the file the variable names.
const fakeClientEnv = "ZINIAO_TEST_FAKE_CLIENT_PIDFILE"

func fakeClientMain(args []string) int {
	var port string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--port="); ok {
			port = v
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.WriteFile(os.Getenv(fakeClientEnv), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return 1
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"statusCode":"0","browserList":[]}`)
	}))
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	<-sigs
	return 0
}

func TestEnsureRunning(t *testing.T) {
	answering := func(body string) int {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().(*net.TCPAddr).Port
	}
	tests := []struct {
		name        string
		port        int
		command     []string
		wantStarted bool
		wantErr     []string // substrings of the error; none means no error
	}{
		{name: "running", port: answering(`{"statusCode":"0","browserList":[]}`), command: []string{"/nonexistent"}},
		{name: "running with an API error", port: answering(`{"statusCode":"-10001","err":"login"}`), command: []string{"/nonexistent"}},
		{name: "no command", port: fakeziniao.DeadPortFor(t),
			wantErr: []string{"not running", "--run_type=web_driver --ipc_type=http --port=", "VIBE_ZINIAO_CLIENT"}},
		{name: "missing executable", port: fakeziniao.DeadPortFor(t), command: []string{"/nonexistent/ziniao"},
			wantErr: []string{"starting /nonexistent/ziniao failed"}},
		{name: "client fails", port: fakeziniao.DeadPortFor(t), command: []string{"/bin/false"}, wantStarted: true,
			wantErr: []string{"/bin/false failed", "without serving its HTTP API"}},
		{name: "client never serves", port: fakeziniao.DeadPortFor(t), command: []string{"/bin/true"}, wantStarted: true,
			wantErr: []string{"did not answer", "normal mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{Port: tt.port, Account: Account{Company: "acme", Username: "ops", Password: "pw"}}
			started, err := EnsureRunning(context.Background(), c, tt.command, 500*time.Millisecond, "")
			if started != tt.wantStarted {
				t.Errorf("started = %v; want %v", started, tt.wantStarted)
			}
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Errorf("EnsureRunning: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrCannotLaunch) || !errors.Is(err, errdefs.ErrUnavailable) {
				t.Fatalf("EnsureRunning = %v; want ErrCannotLaunch (unavailable)", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestEnsureRunningStartsTheClient(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidfile := filepath.Join(t.TempDir(), "pid")
	t.Setenv(fakeClientEnv, pidfile) // inherited by the client the call starts
	c := &Client{Port: fakeziniao.DeadPortFor(t)}
	started, err := EnsureRunning(context.Background(), c, []string{exe}, 10*time.Second, "")
	b, _ := os.ReadFile(pidfile)
	pid, _ := strconv.Atoi(string(b))
	if pid > 0 {
		t.Cleanup(func() {
			syscall.Kill(pid, syscall.SIGTERM)
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if syscall.Kill(pid, 0) != nil {
					return
				}
			}
			t.Errorf("the client (pid %d) did not exit", pid)
		})
	}
	if !started || err != nil {
		t.Fatalf("EnsureRunning = %v, %v; want the client started and answering", started, err)
	}
	if sid := sessionOf(pid); sid != pid {
		t.Errorf("the client runs in session %d; want a session of its own (%d) so it outlives the manager", sid, pid)
	}
	if started, err := EnsureRunning(context.Background(), c, []string{exe}, time.Second, ""); started || err != nil {
		t.Errorf("second EnsureRunning = %v, %v; want the running client used as is", started, err)
	}
}

// sessionOf reads pid's session id from /proc/<pid>/stat (the fourth field after the command name).
func sessionOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 4 {
		return 0
	}
	sid, _ := strconv.Atoi(fields[3])
	return sid
}
