package cli

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb, nil)
	return code, out.String(), errb.String()
}

func TestEnvWebPrintsShellLines(t *testing.T) {
	home := t.TempDir()
	code, out, errOut := run(t, "--home", home, "env", "--web")
	if code != 0 {
		t.Fatalf("exit %d (%s)", code, errOut)
	}
	want := "export PATH='" + home + "/bin/_web:" + home + "/bin/_guard:'\"$PATH\"\n" +
		"export VIBE_DOWNLOAD_DIR='" + home + "/downloads/_web/manual'\n"
	if out != want {
		t.Errorf("env --web printed\n%s\nwant\n%s", out, want)
	}
}

// A task's lines carry its token, which only the manager mints: without one running, nothing is printed.
func TestEnvTaskNeedsTheManager(t *testing.T) {
	code, out, errOut := run(t, "--home", t.TempDir(), "env", "--web", "--task", "a1b2c3d4-0001")
	if code == 0 || out != "" || !strings.Contains(errOut, "is the manager running?") {
		t.Errorf("env --task without a manager: exit %d, stdout %q, stderr %q; want a failure naming the manager and no lines", code, out, errOut)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "'plain'"},
		{"it's", `'it'\''s'`},
		{"$(rm -rf /)", "'$(rm -rf /)'"},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

func TestExitCodes(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"bogus"}, 2, "unexpected argument"},
		{"bad task id", []string{"env", "--web", "--task", "nope"}, 2, "is not a task id"},
		{"store and web", []string{"env", "--web", "--store", "x"}, 2, "can't be used together"},
		{"manager down", []string{"status"}, 1, "is the manager running?"},
		{"ui with the manager down", []string{"ui", "--json"}, 1, "is the manager running?"},
		{"bad task status flag missing", []string{"task", "set", "a1b2c3d4"}, 2, "--status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, append([]string{"--home", home}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d containing %q", code, errOut, tt.code, tt.want)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") > 0 && tt.code == 1 {
				t.Errorf("stderr %q; want one line", errOut)
			}
		})
	}
}

// TestServiceInstallRefusesAnUnsettledBinary runs from the test binary, which go test builds in a
// temporary directory: the unit would name a file soon gone.
func TestServiceInstallRefusesAnUnsettledBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("checks the systemd user unit")
	}
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	home := t.TempDir()
	code, _, errOut := run(t, "--home", home, "service", "install", "--user")
	if code != 1 || !strings.Contains(errOut, "under the temporary directory") || !strings.Contains(errOut, "go tool task install") ||
		!strings.Contains(errOut, "--force") {
		t.Errorf("service install from a temporary directory: exit %d, stderr %q; want 1 naming go tool task install and --force", code, errOut)
	}
	unit := filepath.Join(config, "systemd", "user", "vibe-browser.service")
	if _, err := os.Stat(unit); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused install left %s (%v)", unit, err)
	}
	code, out, errOut := run(t, "--home", home, "service", "install", "--user", "--force")
	if code != 0 || !strings.Contains(out, `loginctl enable-linger "$(id -un)"`) {
		t.Errorf("service install --force: exit %d (%s)\n%s", code, errOut, out)
	}
	if _, err := os.Stat(unit); err != nil {
		t.Errorf("service install --force wrote no unit: %v", err)
	}
}
