package chrome

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gorilla/websocket"
)

// The test binary doubles as a fake Chromium: with fakeModeEnv set, TestMain runs fakeBrowser instead of
// the tests. It speaks the parts of the real protocol the package uses: DevToolsActivePort, /json/version,
// Browser.close over the browser websocket, SingletonLock.
const (
	fakeModeEnv = "CHROME_TEST_FAKE_MODE" // "browser" or "idle" (block until killed)
	// fakeCloseEnv=hang: Browser.close is read but never answered and the browser keeps running.
	fakeCloseEnv = "CHROME_TEST_FAKE_CLOSE"
	// fakeTermEnv=ignore: SIGTERM is ignored.
	fakeTermEnv = "CHROME_TEST_FAKE_TERM"
	// fakeHelperEnv=1: spawn a helper child (sleep) in the browser's group and write its pid to
	// <profile>/helper.pid, standing in for Chromium's zygote and renderers.
	fakeHelperEnv = "CHROME_TEST_FAKE_HELPER"
)

func fakeMain() int {
	if os.Getenv(fakeTermEnv) == "ignore" {
		signal.Ignore(syscall.SIGTERM)
	}
	if os.Getenv(fakeModeEnv) == "idle" {
		select {}
	}
	var profile string
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "--user-data-dir="); ok {
			profile = v
		}
	}
	if profile == "" {
		fmt.Fprintln(os.Stderr, "fake: no --user-data-dir")
		return 2
	}
	if os.Getenv(fakeHelperEnv) == "1" {
		helper := exec.Command("sleep", "1000")
		if err := helper.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fake: helper:", err)
			return 2
		}
		if err := os.WriteFile(filepath.Join(profile, "helper.pid"), []byte(strconv.Itoa(helper.Process.Pid)), 0o600); err != nil {
			return 2
		}
	}
	host, _ := os.Hostname()
	lock := filepath.Join(profile, "SingletonLock")
	if err := os.Symlink(host+"-"+strconv.Itoa(os.Getpid()), lock); err != nil {
		fmt.Fprintln(os.Stderr, "fake: profile locked:", err)
		return 21
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake: listen:", err)
		return 2
	}
	port := ln.Addr().(*net.TCPAddr).Port
	var id [8]byte
	rand.Read(id[:])
	wsPath := "/devtools/browser/" + hex.EncodeToString(id[:])
	wsURL := fmt.Sprintf("ws://127.0.0.1:%d%s", port, wsPath)

	exit := make(chan int, 1) // one exit request is enough; later ones are dropped
	mux := http.NewServeMux()
	mux.HandleFunc("/json/version", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"Browser": "Fake/1.0", "webSocketDebuggerUrl": wsURL})
	})
	mux.HandleFunc(wsPath, func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			var msg struct {
				ID     int    `json:"id"`
				Method string `json:"method"`
			}
			if err := c.ReadJSON(&msg); err != nil {
				return
			}
			if msg.Method == "Browser.close" && os.Getenv(fakeCloseEnv) != "hang" {
				c.WriteJSON(map[string]any{"id": msg.ID, "result": map[string]any{}})
				select {
				case exit <- 0:
				default:
				}
			}
		}
	})
	go http.Serve(ln, mux)
	data := fmt.Sprintf("%d\n%s", port, wsPath)
	tmp := filepath.Join(profile, ".dtap.tmp")
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil || os.Rename(tmp, filepath.Join(profile, devToolsActivePort)) != nil {
		return 2
	}
	fmt.Fprintf(os.Stderr, "DevTools listening on %s\n", wsURL)
	code := <-exit
	os.Remove(lock)
	return code
}
