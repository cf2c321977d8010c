package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"vibebrowser/integration/fakebu/record"
)

// daemonCmdline is what browser-use 0.13 daemons look like to the reaper.
const daemonCmdline = "python3 -m browser_harness.daemon"

// daemonTabTitle is the title of a daemon's dedicated tab before any marker.
const daemonTabTitle = "about:blank"

// ensureDaemon does what browser_harness does on a call: start the session's daemon (detached, its own
// session) unless a live one is recorded, and record it as bu-<BU_NAME>.pid and .sock in BH_RUNTIME_DIR.
// The daemon's dedicated tab is bu-<BU_NAME>.tab, holding its title; a new daemon opens a new tab, and every
// call marks the title the way h does. It returns the tab as the call leaves it.
func ensureDaemon(h harness) (*record.Tab, error) {
	dir, name := os.Getenv("BH_RUNTIME_DIR"), os.Getenv("BU_NAME")
	pidFile := filepath.Join(dir, "bu-"+name+".pid")
	if data, err := os.ReadFile(pidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && syscall.Kill(pid, 0) == nil {
			return markTab(dir, name, h)
		}
	}
	cmd := exec.Command("bash", "-c", `exec -a "`+daemonCmdline+`" sleep 3600`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	// The daemon writes its pid file once it runs; a real one also listens on the sock.
	for range 100 {
		if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); strings.Contains(string(cmdline), "browser_harness.daemon") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(dir, "bu-"+name+".sock"), nil, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		return nil, err
	}
	if log := os.Getenv("FAKEBU_DAEMON_LOG"); log != "" {
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
		if err != nil {
			return nil, err
		}
		_, err = fmt.Fprintf(f, "%s %d\n", name, pid)
		if err := errors.Join(err, f.Close()); err != nil {
			return nil, err
		}
	}
	// A new daemon opens its own tab (the fake tracks only the newest: a tab 0.1.9 left open is forgotten).
	if err := os.WriteFile(tabFile(dir, name), []byte(daemonTabTitle), 0o600); err != nil {
		return nil, err
	}
	return markTab(dir, name, h)
}

func tabFile(dir, name string) string { return filepath.Join(dir, "bu-"+name+".tab") }

// markTab puts h's marker (if any) in front of the daemon tab's title, once.
func markTab(dir, name string, h harness) (*record.Tab, error) {
	data, err := os.ReadFile(tabFile(dir, name))
	if err != nil {
		return nil, err
	}
	title := string(data)
	if m := h.marker(); m != "" && !strings.HasPrefix(title, m) {
		title = m + title
		if err := os.WriteFile(tabFile(dir, name), []byte(title), 0o600); err != nil {
			return nil, err
		}
	}
	return &record.Tab{Title: title, Open: true}, nil
}

// reloadDaemon is `browser-use --reload`: stop the session's daemon and forget it. From 0.1.12 the shutdown
// also closes the daemon's dedicated tab; 0.1.9 leaves it open. It returns that tab (nil: there was none).
func reloadDaemon(h harness) *record.Tab {
	dir, name := os.Getenv("BH_RUNTIME_DIR"), os.Getenv("BU_NAME")
	pidFile := filepath.Join(dir, "bu-"+name+".pid")
	if data, err := os.ReadFile(pidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	os.Remove(pidFile)
	os.Remove(filepath.Join(dir, "bu-"+name+".sock"))
	data, err := os.ReadFile(tabFile(dir, name))
	if err != nil {
		return nil
	}
	tab := &record.Tab{Title: string(data), Open: !h.closesTabs}
	if h.closesTabs {
		os.Remove(tabFile(dir, name))
	}
	return tab
}
