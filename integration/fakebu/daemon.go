package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// daemonCmdline is what browser-use 0.13 daemons look like to the reaper.
const daemonCmdline = "python3 -m browser_harness.daemon"

// ensureDaemon does what browser_harness does on a call: start the session's daemon (detached, its own
// session) unless a live one is recorded, and record it as bu-<BU_NAME>.pid and .sock in BH_RUNTIME_DIR.
func ensureDaemon() error {
	dir, name := os.Getenv("BH_RUNTIME_DIR"), os.Getenv("BU_NAME")
	pidFile := filepath.Join(dir, "bu-"+name+".pid")
	if data, err := os.ReadFile(pidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && syscall.Kill(pid, 0) == nil {
			return nil
		}
	}
	cmd := exec.Command("bash", "-c", `exec -a "`+daemonCmdline+`" sleep 3600`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
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
		return err
	}
	return os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o600)
}

// reloadDaemon is `browser-use --reload`: stop the session's daemon and forget it.
func reloadDaemon() {
	dir, name := os.Getenv("BH_RUNTIME_DIR"), os.Getenv("BU_NAME")
	pidFile := filepath.Join(dir, "bu-"+name+".pid")
	if data, err := os.ReadFile(pidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	os.Remove(pidFile)
	os.Remove(filepath.Join(dir, "bu-"+name+".sock"))
}
