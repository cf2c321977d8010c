// Package service writes and removes the systemd unit or launchd plist that runs vibe-browser serve.
//
// Both files are rendered from Options alone, so what install prints is exactly what the service manager
// reads. Every value from the user (paths, PATH) is quoted for the format it lands in: systemd's C-style
// quoting with '%' specifiers and '$' expansion disarmed, or XML escaping in the plist.
package service

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"vibebrowser/mux/sys/atomicfile"
)

// Names the files and the service go by.
const (
	UnitName  = "vibe-browser.service"
	Label     = "com.vibe-browser.manager"
	PlistName = Label + ".plist"
	// LogName is the file under the home where launchd sends the manager's output (systemd has the journal).
	LogName = "manager.log"
)

// StopTimeoutSec is how long the service manager waits after SIGTERM before killing: above the manager's
// 20 s quit barrier, so browsers are stopped by the manager, not cut down with it.
const StopTimeoutSec = 40

// Options describe the service to write.
type Options struct {
	Exe  string            // absolute path of the vibe-browser binary
	Home string            // absolute VIBE_HOME; passed as --home and VIBE_HOME
	User bool              // systemd: a user unit (--user) instead of a system one; launchd: always a user agent
	Env  map[string]string // extra environment, e.g. PATH (so the manager finds browser-use and Chromium)
}

// SystemdUnit renders the systemd unit. Type=notify: the manager sends READY=1 once it has adopted browsers
// and reaped; KillMode=mixed: SIGTERM reaches only the manager, which runs its quit barrier, and whatever is
// left of the cgroup is killed after TimeoutStopSec.
func SystemdUnit(o Options) string {
	var b strings.Builder
	b.WriteString("# Written by vibe-browser service install; vibe-browser service uninstall removes it.\n")
	b.WriteString("[Unit]\n")
	b.WriteString("Description=vibe-browser manager (shared browsers for AI agents)\n")
	b.WriteString("After=network.target\n\n")
	b.WriteString("[Service]\n")
	b.WriteString("Type=notify\n")
	// '$' is substituted in the arguments of a command line, not in the executable's path.
	fmt.Fprintf(&b, "ExecStart=%s serve --home %s\n", systemdWord(o.Exe, false), systemdWord(o.Home, true))
	for _, kv := range environment(o) {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote(kv[0]+"="+kv[1], false))
	}
	b.WriteString("KillMode=mixed\n")
	fmt.Fprintf(&b, "TimeoutStopSec=%d\n", StopTimeoutSec)
	b.WriteString("Restart=on-failure\n")
	b.WriteString("RestartSec=2\n\n")
	b.WriteString("[Install]\n")
	if o.User {
		b.WriteString("WantedBy=default.target\n")
	} else {
		b.WriteString("WantedBy=multi-user.target\n")
	}
	return b.String()
}

// LaunchdPlist renders the launchd agent. KeepAlive restarts the manager only after an unsuccessful exit
// (systemd's Restart=on-failure), so a clean quit stays quit; ExitTimeOut is the SIGTERM → SIGKILL wait.
func LaunchdPlist(o Options) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString(`<plist version="1.0">` + "\n<dict>\n")
	key := func(k string) { fmt.Fprintf(&b, "\t<key>%s</key>\n", xmlText(k)) }
	str := func(indent, s string) { fmt.Fprintf(&b, "%s<string>%s</string>\n", indent, xmlText(s)) }
	key("Label")
	str("\t", Label)
	key("ProgramArguments")
	b.WriteString("\t<array>\n")
	for _, a := range []string{o.Exe, "serve", "--home", o.Home} {
		str("\t\t", a)
	}
	b.WriteString("\t</array>\n")
	key("EnvironmentVariables")
	b.WriteString("\t<dict>\n")
	for _, kv := range environment(o) {
		fmt.Fprintf(&b, "\t\t<key>%s</key>\n", xmlText(kv[0]))
		str("\t\t", kv[1])
	}
	b.WriteString("\t</dict>\n")
	key("RunAtLoad")
	b.WriteString("\t<true/>\n")
	key("KeepAlive")
	b.WriteString("\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
	key("ExitTimeOut")
	fmt.Fprintf(&b, "\t<integer>%d</integer>\n", StopTimeoutSec)
	key("ProcessType")
	str("\t", "Background")
	key("StandardOutPath")
	str("\t", filepath.Join(o.Home, LogName))
	key("StandardErrorPath")
	str("\t", filepath.Join(o.Home, LogName))
	b.WriteString("</dict>\n</plist>\n")
	return b.String()
}

// environment is VIBE_HOME followed by o.Env in key order; Home wins over an Env entry of the same name.
func environment(o Options) [][2]string {
	env := [][2]string{{"VIBE_HOME", o.Home}}
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		if k != "VIBE_HOME" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, [2]string{k, o.Env[k]})
	}
	return env
}

// systemdWord renders one word of a unit file command line or value: bare when every character is plainly
// safe, else quoted by systemdQuote.
func systemdWord(s string, dollars bool) string {
	safe := s != ""
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("/._+:,@=-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return systemdQuote(s, dollars)
}

// systemdQuote wraps s in double quotes with C escapes (systemd.syntax(7)). Every '%' is doubled so no
// specifier is expanded; with dollars (a command line argument) every '$' is doubled so no variable is
// substituted.
func systemdQuote(s string, dollars bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '%':
			b.WriteString("%%")
		case r == '$' && dollars:
			b.WriteString("$$")
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// xmlText escapes s for XML character data and attribute values.
func xmlText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&apos;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// UnitPath is where install writes: with user, $XDG_CONFIG_HOME/systemd/user/vibe-browser.service (default
// ~/.config), else /etc/systemd/system/vibe-browser.service; on macOS ~/Library/LaunchAgents/com.vibe-browser.manager.plist
// either way (a launchd agent runs in the user's session, where the browsers' windows belong).
func UnitPath(user bool) (string, error) { return unitPath(runtime.GOOS, user) }

func unitPath(goos string, user bool) (string, error) {
	if goos == "darwin" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("service path: %w", err)
		}
		return filepath.Join(home, "Library", "LaunchAgents", PlistName), nil
	}
	if !user {
		return filepath.Join("/etc/systemd/system", UnitName), nil
	}
	// XDG: a relative XDG_CONFIG_HOME is invalid and ignored.
	config := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(config) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("service path: %w", err)
		}
		config = filepath.Join(home, ".config")
	}
	return filepath.Join(config, "systemd", "user", UnitName), nil
}

// validate refuses options no service file for goos can carry faithfully.
func validate(goos string, o Options) error {
	if !filepath.IsAbs(o.Exe) {
		return fmt.Errorf("service: executable %q is not an absolute path", o.Exe)
	}
	if !filepath.IsAbs(o.Home) {
		return fmt.Errorf("service: home %q is not an absolute path", o.Home)
	}
	check := func(what, s string) error {
		for _, r := range s {
			// Control characters cannot be written into XML 1.0 at all, and a newline in a path is a mistake.
			if r < 0x20 || r == 0x7f {
				return fmt.Errorf("service: %s %q contains control character %U", what, s, r)
			}
		}
		return nil
	}
	if err := errors.Join(check("executable", o.Exe), check("home", o.Home)); err != nil {
		return err
	}
	// systemd refuses to run an executable whose path has quotes or backslashes, however they are escaped
	// ("Executable name contains special characters").
	if goos != "darwin" && strings.ContainsAny(o.Exe, `"'\`) {
		return fmt.Errorf("service: systemd cannot run executable %q: its path contains a quote or backslash; move the binary", o.Exe)
	}
	for k, v := range o.Env {
		if !envName(k) {
			return fmt.Errorf("service: environment variable name %q: want [A-Za-z_][A-Za-z0-9_]*", k)
		}
		if err := check("environment variable "+k, v); err != nil {
			return err
		}
	}
	return nil
}

func envName(s string) bool {
	for i, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '_' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

// Install writes the service file for this OS atomically (temp file + rename, mode 0644) and prints to w
// what it wrote and the exact commands that start it. It does not start anything itself.
func Install(o Options, w io.Writer) (path string, err error) { return install(runtime.GOOS, o, w) }

func install(goos string, o Options, w io.Writer) (string, error) {
	if err := validate(goos, o); err != nil {
		return "", err
	}
	path, err := unitPath(goos, o.User)
	if err != nil {
		return "", err
	}
	content := SystemdUnit(o)
	if goos == "darwin" {
		content = LaunchdPlist(o)
		// launchd opens the log file but does not create its directory.
		if err := os.MkdirAll(o.Home, 0o700); err != nil {
			return "", fmt.Errorf("service: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("service: %w", err)
	}
	if err := atomicfile.Write(path, []byte(content), 0o644); err != nil {
		return "", fmt.Errorf("service: %w", err)
	}
	fmt.Fprintf(w, "Wrote %s:\n\n%s\n", path, content)
	// One manager per home: the service's would exit at once beside one started by hand (run/manager.lock).
	fmt.Fprintf(w, "First stop a manager you started in a terminal (vibe-browser serve: Ctrl-C there): one manager runs per home.\n")
	if goos == "darwin" {
		uid := strconv.Itoa(os.Getuid())
		fmt.Fprintf(w, "Start it now and at every login:\n  launchctl bootstrap gui/%s %s\n", uid, ShellQuote(path))
		fmt.Fprintf(w, "After a reinstall, unload the old one first:\n  launchctl bootout gui/%s/%s\n", uid, Label)
		fmt.Fprintf(w, "Its log: %s\n", ShellQuote(filepath.Join(o.Home, LogName)))
		return path, nil
	}
	sc := systemctl(o.User)
	fmt.Fprintf(w, "Start it now and at every boot:\n  %s daemon-reload && %s enable --now vibe-browser\n", sc, sc)
	if o.User {
		// id -un, not $USER: a root shell (su, sudo -s, a container) often has no USER.
		fmt.Fprintf(w, "Keep it running while you are logged out:\n  loginctl enable-linger \"$(id -un)\"\n")
		fmt.Fprintf(w, "Its log:\n  journalctl --user -u vibe-browser -f\n")
	} else {
		fmt.Fprintf(w, "Its log:\n  journalctl -u vibe-browser -f\n")
	}
	return path, nil
}

// Uninstall removes the service file (and, for systemd, the enable link pointing at it) and prints the
// commands that stop the running service. A missing file is not an error; it says so.
func Uninstall(user bool, w io.Writer) error { return uninstall(runtime.GOOS, user, w) }

func uninstall(goos string, user bool, w io.Writer) error {
	path, err := unitPath(goos, user)
	if err != nil {
		return err
	}
	err = os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(w, "No service file at %s; nothing to remove.\n", path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("service: %w", err)
	}
	fmt.Fprintf(w, "Removed %s.\n", path)
	if goos == "darwin" {
		fmt.Fprintf(w, "Stop the running manager:\n  launchctl bootout gui/%d/%s\n", os.Getuid(), Label)
		return nil
	}
	// What systemctl disable would do; with the unit file gone, systemctl itself can no longer.
	for _, link := range enableLinks(path) {
		if err := os.Remove(link); err != nil {
			return fmt.Errorf("service: %w", err)
		}
		fmt.Fprintf(w, "Removed %s.\n", link)
	}
	sc := systemctl(user)
	fmt.Fprintf(w, "Stop the running manager:\n  %s stop vibe-browser && %s daemon-reload\n", sc, sc)
	return nil
}

func systemctl(user bool) string {
	if user {
		return "systemctl --user"
	}
	return "systemctl"
}

// ShellQuote quotes s for a POSIX shell when it needs it, so a printed command can be pasted.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("/._+:,@=-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
