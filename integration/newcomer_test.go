//go:build integration

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallTask: go tool task install puts both binaries side by side in PREFIX/bin; the installed
// vibe-browser runs, and its serve (with no VIBE_SHIM) copies the wrapshim beside it into wrappers that reach
// a browser.
func TestInstallTask(t *testing.T) {
	t.Parallel()
	prefix := filepath.Join(t.TempDir(), "prefix")
	task := exec.Command("go", "tool", "task", "install", "PREFIX="+prefix)
	task.Dir = ".." // the module root, where Taskfile.yml is
	if out, err := task.CombinedOutput(); err != nil {
		t.Fatalf("go tool task install: %v\n%s", err, out)
	} else if !strings.Contains(string(out), "installed "+filepath.Join(prefix, "bin", "vibe-browser")) ||
		!strings.Contains(string(out), "is not on your PATH") {
		t.Errorf("go tool task install printed %q; want what it installed and that its bin is not on PATH", out)
	}
	bins := builtBinaries(t)
	bins.vibe, bins.shim = filepath.Join(prefix, "bin", "vibe-browser"), filepath.Join(prefix, "bin", "wrapshim")
	out, err := exec.Command(bins.vibe, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "vibe-browser ") || strings.TrimSpace(string(out)) == "vibe-browser dev" {
		t.Errorf("installed vibe-browser version = %q, %v; want the build's version (git describe)", out, err)
	}

	m := startManagerWith(t, bins, settledTempDir(t), "VIBE_SHIM=") // the shim beside the binary, as installed
	m.cli("store", "add", "Acme Shop")
	shim, err := os.ReadFile(bins.shim)
	if err != nil {
		t.Fatal(err)
	}
	if wrapper, err := os.ReadFile(filepath.Join(m.home, "bin", "acme-shop", "browser-use")); err != nil || !bytes.Equal(wrapper, shim) {
		t.Fatalf("the store's wrapper is not the installed wrapshim (%v)", err)
	}
	web := site(t)
	got := m.mustAgent("--store acme-shop --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/alpha\neval document.title\nPY")
	if !strings.Contains(got, `"page alpha"`) {
		t.Errorf("a call through the installed wrapper printed %q; want the page's title", got)
	}
}

// TestServiceInstallFromACheckoutRefuses: a vibe-browser in a checkout's bin (what task build makes) is no
// binary for a service; the refusal names task install, and --force installs it anyway.
func TestServiceInstallFromACheckoutRefuses(t *testing.T) {
	t.Parallel()
	checkout := t.TempDir()
	if err := os.Mkdir(filepath.Join(checkout, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module vibebrowser\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	built, err := os.ReadFile(builtBinaries(t).vibe)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(checkout, "bin", "vibe-browser")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, built, 0o755); err != nil {
		t.Fatal(err)
	}
	home, config := t.TempDir(), t.TempDir()
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(exe, append([]string{"--home", home, "service", "install", "--user"}, args...)...)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_CONFIG_HOME=" + config}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	unit := filepath.Join(config, "systemd", "user", "vibe-browser.service")
	_, stderr, err := run()
	if err == nil || !strings.Contains(stderr, exe+" is inside the git checkout "+checkout) ||
		!strings.Contains(stderr, "go tool task install") || !strings.Contains(stderr, "--force") {
		t.Errorf("service install --user from a checkout: %v, stderr %q; want a refusal naming the checkout, task install and --force", err, stderr)
	}
	if _, err := os.Stat(unit); err == nil {
		t.Errorf("the refused install wrote %s", unit)
	}
	stdout, stderr, err := run("--force")
	if err != nil {
		t.Fatalf("service install --user --force: %v (%s)", err, stderr)
	}
	b, err := os.ReadFile(unit)
	if err != nil || !strings.Contains(string(b), "ExecStart="+exe+" serve") {
		t.Errorf("unit after --force:\n%s\n(%v); want it to run %s", b, err, exe)
	}
	for _, want := range []string{"First stop a manager you started in a terminal", `loginctl enable-linger "$(id -un)"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("service install printed\n%s\nwant %q", stdout, want)
		}
	}
}
