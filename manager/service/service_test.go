package service

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// awkwardHome has every character that needs care in one format or the other.
const awkwardHome = `/Users/Jo & Al/vibe home 100% $HOME "q" \ <x>'`

func opts(user bool) Options {
	return Options{
		Exe:  "/opt/vibe browser/bin/vibe-browser",
		Home: awkwardHome,
		User: user,
		Env:  map[string]string{"PATH": "/opt/my tools/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
	}
}

// unitValues returns the values of key in a unit file, in order.
func unitValues(unit, key string) []string {
	var out []string
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// systemdWords is splitSystemdWords for a value the test's own unit produced.
func systemdWords(t *testing.T, value string, exec bool) []string {
	t.Helper()
	words, err := splitSystemdWords(value, exec)
	if err != nil {
		t.Fatal(err)
	}
	return words
}

func TestSystemdUnit(t *testing.T) {
	tests := []struct {
		name     string
		user     bool
		wantedBy string
	}{
		{name: "user", user: true, wantedBy: "default.target"},
		{name: "system", user: false, wantedBy: "multi-user.target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(tt.user)
			unit := SystemdUnit(o)
			for key, want := range map[string]string{
				"Type": "notify", "KillMode": "mixed", "Restart": "on-failure", "RestartSec": "2",
				"After": "network.target", "WantedBy": tt.wantedBy,
			} {
				if got := unitValues(unit, key); !slices.Equal(got, []string{want}) {
					t.Errorf("%s = %q; want [%q]\n%s", key, got, want, unit)
				}
			}
			stop := unitValues(unit, "TimeoutStopSec")
			if n, err := strconv.Atoi(strings.Join(stop, "")); err != nil || n <= 20 {
				t.Errorf("TimeoutStopSec = %q; want one number above the 20 s quit barrier", stop)
			}
			exec := unitValues(unit, "ExecStart")
			if len(exec) != 1 {
				t.Fatalf("ExecStart = %q; want one", exec)
			}
			if got, want := systemdWords(t, exec[0], true), []string{o.Exe, "serve", "--home", o.Home}; !slices.Equal(got, want) {
				t.Errorf("ExecStart decodes to %q; want %q", got, want)
			}
			var env []string
			for _, v := range unitValues(unit, "Environment") {
				env = append(env, systemdWords(t, v, false)...)
			}
			want := []string{"VIBE_HOME=" + o.Home, "LANG=C.UTF-8", "PATH=" + o.Env["PATH"]}
			if !slices.Equal(env, want) {
				t.Errorf("Environment decodes to %q; want %q", env, want)
			}
		})
	}
}

func TestSystemdQuote(t *testing.T) {
	tests := []struct {
		in      string
		dollars bool
		want    string
	}{
		{in: "/usr/bin/vibe-browser", dollars: true, want: "/usr/bin/vibe-browser"},
		{in: "/a b", dollars: true, want: `"/a b"`},
		{in: "100%", dollars: true, want: `"100%%"`},
		{in: "$HOME", dollars: true, want: `"$$HOME"`},
		{in: "$HOME", dollars: false, want: `"$HOME"`},
		{in: `a"b\c`, dollars: false, want: `"a\"b\\c"`},
		{in: "a;b", dollars: true, want: `"a;b"`},
		{in: "", dollars: true, want: `""`},
		{in: "a\nb\x01", dollars: false, want: `"a\nb\x01"`},
		{in: "店铺", dollars: true, want: `"店铺"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := systemdWord(tt.in, tt.dollars); got != tt.want {
				t.Errorf("systemdWord(%q, %v) = %s; want %s", tt.in, tt.dollars, got, tt.want)
			}
		})
	}
}

// TestSystemdAnalyzeVerify runs systemd's own parser over the unit, in both modes. verify also fails when
// ExecStart's first word is not an executable, so a mis-quoted path with spaces is caught.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	dir := filepath.Join(t.TempDir(), "Jo & Al tools 100% $x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "vibe browser")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, user := range []bool{false, true} {
		t.Run(fmt.Sprintf("user=%v", user), func(t *testing.T) {
			o := opts(user)
			o.Exe = exe
			unitDir := t.TempDir()
			path := filepath.Join(unitDir, UnitName)
			if err := os.WriteFile(path, []byte(SystemdUnit(o)), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"verify", path}
			if user {
				args = []string{"--user", "verify", path}
			}
			cmd := exec.Command(analyze, args...)
			// A user manager looks up its runtime dir even offline.
			cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir(), "SYSTEMD_LOG_LEVEL=notice")
			out, err := cmd.CombinedOutput()
			if err != nil || bytes.Contains(out, []byte("vibe-browser")) {
				t.Fatalf("systemd-analyze %s: %v\n%s\n%s", strings.Join(args, " "), err, out, SystemdUnit(o))
			}
		})
	}
}

// plistValue is a decoded property list value: string, int64, bool, []any or map[string]any.
func decodePlist(t *testing.T, doc string) map[string]any {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = true
	var parse func(start xml.StartElement) any
	parse = func(start xml.StartElement) any {
		switch start.Name.Local {
		case "dict":
			m := map[string]any{}
			var key string
			for {
				tok, err := d.Token()
				if err != nil {
					t.Fatalf("plist: %v", err)
				}
				switch tok := tok.(type) {
				case xml.StartElement:
					if tok.Name.Local == "key" {
						if err := d.DecodeElement(&key, &tok); err != nil {
							t.Fatal(err)
						}
						continue
					}
					if _, dup := m[key]; dup || key == "" {
						t.Fatalf("plist: value without a fresh key (%q)", key)
					}
					m[key] = parse(tok)
					key = ""
				case xml.EndElement:
					return m
				}
			}
		case "array":
			var a []any
			for {
				tok, err := d.Token()
				if err != nil {
					t.Fatalf("plist: %v", err)
				}
				switch tok := tok.(type) {
				case xml.StartElement:
					a = append(a, parse(tok))
				case xml.EndElement:
					return a
				}
			}
		case "string", "integer":
			var s string
			if err := d.DecodeElement(&s, &start); err != nil {
				t.Fatal(err)
			}
			if start.Name.Local == "string" {
				return s
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("plist integer %q", s)
			}
			return n
		case "true", "false":
			if err := d.Skip(); err != nil {
				t.Fatal(err)
			}
			return start.Name.Local == "true"
		}
		t.Fatalf("plist: unexpected element <%s>", start.Name.Local)
		return nil
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			t.Fatal("plist: no top-level dict")
		}
		if err != nil {
			t.Fatalf("plist: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "dict" {
			top := parse(se).(map[string]any)
			for {
				if _, err := d.Token(); errors.Is(err, io.EOF) {
					return top
				} else if err != nil {
					t.Fatalf("plist after the dict: %v", err)
				}
			}
		}
	}
}

func TestLaunchdPlist(t *testing.T) {
	o := opts(true)
	doc := LaunchdPlist(o)
	p := decodePlist(t, doc)
	log := o.Home + "/" + LogName
	checks := []struct {
		key  string
		want any
	}{
		{"Label", Label},
		{"ProgramArguments", []any{o.Exe, "serve", "--home", o.Home}},
		{"EnvironmentVariables", map[string]any{"VIBE_HOME": o.Home, "PATH": o.Env["PATH"], "LANG": "C.UTF-8"}},
		{"RunAtLoad", true},
		{"KeepAlive", map[string]any{"SuccessfulExit": false}},
		{"ExitTimeOut", int64(StopTimeoutSec)},
		{"StandardOutPath", log},
		{"StandardErrorPath", log},
	}
	for _, c := range checks {
		if got := p[c.key]; fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("plist %s = %#v; want %#v", c.key, got, c.want)
		}
	}
	if n, _ := p["ExitTimeOut"].(int64); n <= 20 {
		t.Errorf("ExitTimeOut = %d; want above the 20 s quit barrier", n)
	}
	if strings.Contains(doc, "Jo & Al") || strings.Contains(doc, "<x>") {
		t.Errorf("plist carries unescaped '&' or '<':\n%s", doc)
	}
}

func TestPlutilLint(t *testing.T) {
	plutil, err := exec.LookPath("plutil")
	if err != nil {
		t.Skip("plutil not installed")
	}
	path := filepath.Join(t.TempDir(), PlistName)
	if err := os.WriteFile(path, []byte(LaunchdPlist(opts(true))), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(plutil, "-lint", path).CombinedOutput(); err != nil {
		t.Fatalf("plutil -lint: %v\n%s", err, out)
	}
}

func TestUnitPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct {
		name string
		goos string
		user bool
		xdg  string
		want string
	}{
		{name: "linux user with XDG_CONFIG_HOME", goos: "linux", user: true, xdg: "/cfg", want: "/cfg/systemd/user/vibe-browser.service"},
		{name: "linux user default config", goos: "linux", user: true, want: home + "/.config/systemd/user/vibe-browser.service"},
		{name: "linux user relative XDG ignored", goos: "linux", user: true, xdg: "cfg", want: home + "/.config/systemd/user/vibe-browser.service"},
		{name: "linux system", goos: "linux", user: false, xdg: "/cfg", want: "/etc/systemd/system/vibe-browser.service"},
		{name: "darwin user", goos: "darwin", user: true, want: home + "/Library/LaunchAgents/com.vibe-browser.manager.plist"},
		{name: "darwin without --user", goos: "darwin", user: false, want: home + "/Library/LaunchAgents/com.vibe-browser.manager.plist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", tt.xdg)
			got, err := unitPath(tt.goos, tt.user)
			if err != nil || got != tt.want {
				t.Errorf("unitPath(%s, %v) = %q, %v; want %q", tt.goos, tt.user, got, err, tt.want)
			}
		})
	}
}

func TestInstallUninstallSystemdUser(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "my config")
	t.Setenv("XDG_CONFIG_HOME", cfg)
	o := opts(true)
	var out strings.Builder
	path, err := Install(o, &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cfg, "systemd", "user", UnitName); path != want {
		t.Fatalf("Install path = %q; want %q", path, want)
	}
	assertFile(t, path, SystemdUnit(o))
	for _, want := range []string{
		"Wrote " + path,
		"ExecStart=",
		"systemctl --user daemon-reload && systemctl --user enable --now vibe-browser",
		"loginctl enable-linger \"$(id -un)\"",
		"First stop a manager you started in a terminal",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Install output lacks %q:\n%s", want, out.String())
		}
	}
	// A reinstall replaces the file and leaves no temp file behind.
	o.Env["PATH"] = "/usr/local/bin:/usr/bin"
	if _, err := Install(o, io.Discard); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, SystemdUnit(o))
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("unit dir holds %d entries after reinstall; want only the unit", len(entries))
	}

	// What systemctl --user enable would have made.
	wants := filepath.Join(filepath.Dir(path), "default.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(wants, UnitName)
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Uninstall(true, &out); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, link} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there after Uninstall (%v)", p, err)
		}
	}
	if want := "systemctl --user stop vibe-browser && systemctl --user daemon-reload"; !strings.Contains(out.String(), want) {
		t.Errorf("Uninstall output lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	if err := Uninstall(true, &out); err != nil {
		t.Fatalf("Uninstall(missing) = %v; want nil", err)
	}
	if !strings.Contains(out.String(), "nothing to remove") {
		t.Errorf("Uninstall(missing) output = %q; want it to say nothing was there", out.String())
	}
}

func TestInstallUninstallLaunchd(t *testing.T) {
	home := filepath.Join(t.TempDir(), "Jo & Al")
	t.Setenv("HOME", home)
	o := opts(true)
	o.Home = filepath.Join(home, ".vibe seller")
	var out strings.Builder
	path, err := install("darwin", o, &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "Library", "LaunchAgents", PlistName); path != want {
		t.Fatalf("install path = %q; want %q", path, want)
	}
	assertFile(t, path, LaunchdPlist(o))
	decodePlist(t, LaunchdPlist(o))
	if fi, err := os.Stat(o.Home); err != nil || !fi.IsDir() {
		t.Errorf("home for the launchd log not created: %v", err)
	}
	want := fmt.Sprintf("launchctl bootstrap gui/%d '%s'", os.Getuid(), path)
	if !strings.Contains(out.String(), want) {
		t.Errorf("install output lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	if err := uninstall("darwin", true, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("plist still there after uninstall (%v)", err)
	}
	if want := fmt.Sprintf("launchctl bootout gui/%d/%s", os.Getuid(), Label); !strings.Contains(out.String(), want) {
		t.Errorf("uninstall output lacks %q:\n%s", want, out.String())
	}
}

func TestInstallRefusesBadOptions(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	good := opts(true)
	tests := []struct {
		name string
		edit func(*Options)
	}{
		{name: "relative exe", edit: func(o *Options) { o.Exe = "vibe-browser" }},
		{name: "relative home", edit: func(o *Options) { o.Home = "~/.vibe-seller" }},
		{name: "newline in home", edit: func(o *Options) { o.Home = "/home/x\n[Service]" }},
		{name: "control character in PATH", edit: func(o *Options) { o.Env = map[string]string{"PATH": "/bin\x00"} }},
		{name: "quote in exe path (systemd)", edit: func(o *Options) { o.Exe = "/opt/Jo's/vibe-browser" }},
		{name: "backslash in exe path (systemd)", edit: func(o *Options) { o.Exe = `/opt/a\b/vibe-browser` }},
		{name: "bad variable name", edit: func(o *Options) { o.Env = map[string]string{"A=B": "c"} }},
		{name: "variable name starting with a digit", edit: func(o *Options) { o.Env = map[string]string{"1PATH": "c"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			o.Env = map[string]string{"PATH": "/bin"}
			tt.edit(&o)
			if _, err := Install(o, io.Discard); err == nil {
				t.Fatalf("Install(%+v) = nil; want an error", o)
			}
			if entries, _ := os.ReadDir(cfg); len(entries) != 0 {
				t.Errorf("Install wrote something for refused options")
			}
		})
	}
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("%s mode = %v; want 0644", path, fi.Mode().Perm())
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s =\n%s\nwant\n%s", path, got, want)
	}
}

func TestInstalledReadsBackWhatInstallWrote(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "cfg"))
	t.Setenv("HOME", filepath.Join(t.TempDir(), "Jo & Al"))
	for _, goos := range []string{"linux", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			if _, err := installed(goos, true); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("installed(%s) before install = %v; want fs.ErrNotExist", goos, err)
			}
			o := opts(true)
			o.Exe = `/opt/vibe $HOME 100%/vibe-browser`
			path, err := install(goos, o, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			u, err := installed(goos, true)
			if err != nil {
				t.Fatal(err)
			}
			want := Unit{Path: path, Exe: o.Exe, Home: o.Home, Enabled: goos == "darwin"}
			if u != want {
				t.Errorf("installed(%s) = %+v; want %+v", goos, u, want)
			}
			if goos == "darwin" {
				return
			}
			wants := filepath.Join(filepath.Dir(path), "default.target.wants")
			if err := os.MkdirAll(wants, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(path, filepath.Join(wants, UnitName)); err != nil {
				t.Fatal(err)
			}
			if u, err := installed(goos, true); err != nil || !u.Enabled {
				t.Errorf("installed(%s) after enable = %+v, %v; want Enabled", goos, u, err)
			}
		})
	}
}

func TestSplitSystemdWordsRefusesBrokenValues(t *testing.T) {
	for _, v := range []string{`"open`, `"ends in \`, `"\x4"`} {
		if words, err := splitSystemdWords(v, true); err == nil {
			t.Errorf("splitSystemdWords(%q) = %q; want an error", v, words)
		}
	}
}

func TestUnsettled(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) string {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("checkout/go.mod", "// the project\nmodule vibebrowser\n\ngo 1.26\n")
	if err := os.Mkdir(filepath.Join(root, "checkout", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("worktree/go.mod", "module \"vibebrowser\"\n")
	write("worktree/.git", "gitdir: /elsewhere/.git/worktrees/w\n")
	write("dotfiles/.git/HEAD", "ref: refs/heads/main\n")
	write("dotfiles/go.mod", "module example.com/dotfiles\n")

	tests := []struct {
		name, exe, want string
	}{
		{"checkout's bin", write("checkout/bin/vibe-browser", ""), "inside the git checkout " + filepath.Join(root, "checkout")},
		{"worktree", write("worktree/vibe-browser", ""), "inside the git checkout " + filepath.Join(root, "worktree")},
		{"another module's repository", write("dotfiles/.local/bin/vibe-browser", ""), "under the temporary directory"},
		{"temporary directory", write("plain/vibe-browser", ""), "under the temporary directory"},
		{"installed", "/usr/local/bin/vibe-browser", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Unsettled(tt.exe, "vibebrowser")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("Unsettled(%q) = %q; want %q", tt.exe, got, tt.want)
			}
		})
	}
	if got := checkoutOf(filepath.Join(root, "dotfiles", ".local", "bin"), "vibebrowser"); got != "" {
		t.Errorf("checkoutOf(a dotfiles repository) = %q; want none", got)
	}
}
