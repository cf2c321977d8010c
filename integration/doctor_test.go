//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"vibebrowser/manager/doctor"
)

// doctorRun is one `vibe-browser doctor` run: its exit code, its report and its stderr.
type doctorRun struct {
	code   int
	out    string
	stderr string
}

// line returns the report's line of the named check.
func (r doctorRun) line(name string) string {
	for _, l := range strings.Split(r.out, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[1] == name {
			return l
		}
	}
	return ""
}

// doctorCLI runs the built `vibe-browser --home H doctor args…` with m's environment changed by set (an empty
// value removes the variable), as a user's shell would run it.
func doctorCLI(t *testing.T, m *managed, set map[string]string, args ...string) doctorRun {
	t.Helper()
	var env []string
	for _, kv := range m.env {
		name, _, _ := strings.Cut(kv, "=")
		if _, changed := set[name]; !changed {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	cmd := exec.Command(m.bins.vibe, append([]string{"--home", m.home, "doctor"}, args...)...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := doctorRun{out: out.String(), stderr: errb.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantDoctorFails asserts the run exited 1 with the named check failing, its line naming the fragments (the
// problem and its fix), and one line on stderr.
func wantDoctorFails(t *testing.T, r doctorRun, name string, fragments ...string) {
	t.Helper()
	line := r.line(name)
	if r.code != 1 || !strings.HasPrefix(line, "FAIL") {
		t.Errorf("doctor exit %d, %s line %q; want exit 1 and FAIL\n%s", r.code, name, line, r.out)
	}
	for _, f := range append(fragments, "; fix: ") {
		if !strings.Contains(line, f) {
			t.Errorf("doctor %s line %q lacks %q", name, line, f)
		}
	}
	if !strings.Contains(r.stderr, "checks failed") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("doctor stderr %q; want one line saying how many checks failed", r.stderr)
	}
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	port := m.addStore("Acme Shop").ProxyPort
	if port == 0 {
		t.Fatal("store add --json printed no proxy_port")
	}
	m.cli("browser", "start", "acme-shop")
	// The fake CLI answers --version as the newest tested browser-use would.
	rel := doctor.Recommended()
	version := map[string]string{"FAKEBU_STDOUT": "browser-use " + rel.BrowserUse + " (browser-harness " + rel.Harness + ")\n"}

	t.Run("healthy", func(t *testing.T) {
		r := doctorCLI(t, m, version)
		if r.code != 0 || strings.Contains(r.out, "FAIL") {
			t.Fatalf("doctor on a healthy setup: exit %d, stderr %q\n%s", r.code, r.stderr, r.out)
		}
		for name, want := range map[string]string{
			"browser-use":    "browser-use " + rel.BrowserUse + " on browser-harness " + rel.Harness + " (tested)",
			"chromium":       "(VIBE_CHROME): Chromium",
			"manager":        "the same as this vibe-browser",
			"port:acme-shop": "held by the manager's mux",
			"home":           "yours, private",
		} {
			if line := r.line(name); !strings.HasPrefix(line, "OK") || !strings.Contains(line, want) {
				t.Errorf("doctor %s line %q; want OK with %q", name, line, want)
			}
		}
	})
	// A new shell without the VIBE_BROWSER_USE the manager was started with: the manager's CLI decides.
	t.Run("browser-use only the manager's", func(t *testing.T) {
		r := doctorCLI(t, m, map[string]string{"VIBE_BROWSER_USE": "", "PATH": t.TempDir() + ":/usr/bin:/bin",
			"FAKEBU_STDOUT": version["FAKEBU_STDOUT"]})
		line := r.line("browser-use")
		if !strings.HasPrefix(line, "OK") {
			t.Errorf("doctor browser-use line %q; want OK from the running manager's CLI\n%s", line, r.out)
		}
		for _, want := range []string{"the running manager's " + m.bins.fakeBU + " (VIBE_BROWSER_USE)",
			"browser-use " + rel.BrowserUse + " on browser-harness " + rel.Harness + " (tested)",
			"note: this shell finds none (no real browser-use CLI was found"} {
			if !strings.Contains(line, want) {
				t.Errorf("doctor browser-use line %q lacks %q", line, want)
			}
		}
		if r.code != 0 {
			t.Errorf("doctor exit %d (stderr %q); want 0\n%s", r.code, r.stderr, r.out)
		}
	})
	t.Run("chromium missing", func(t *testing.T) {
		r := doctorCLI(t, m, map[string]string{"FAKEBU_STDOUT": version["FAKEBU_STDOUT"], "VIBE_CHROME": "/nonexistent/chromium"})
		wantDoctorFails(t, r, "chromium", "/nonexistent/chromium", "point VIBE_CHROME at an executable Chromium")
	})
	t.Run("home with wrong modes", func(t *testing.T) {
		if err := os.Chmod(m.home, 0o777); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(m.home, 0o700) })
		r := doctorCLI(t, m, version)
		wantDoctorFails(t, r, "home", "has mode 0777 (want 0700)", "chmod 700 "+m.home)
	})

	if err := m.stop(); err != nil {
		t.Fatalf("manager stop: %v", err)
	}
	t.Run("browser-use missing", func(t *testing.T) {
		r := doctorCLI(t, m, map[string]string{"VIBE_BROWSER_USE": "", "PATH": t.TempDir() + ":/usr/bin:/bin"})
		wantDoctorFails(t, r, "browser-use", "no real browser-use CLI was found", "uv tool install browser-use=="+rel.BrowserUse)
	})
	t.Run("port taken by another process", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			t.Fatal("node is not installed (go tool task deps installs it)")
		}
		squatter := exec.Command(node, "-e", `require("net").createServer().listen(+process.argv[1], "127.0.0.1", () => console.log("listening"))`, strconv.Itoa(port))
		stdout, _ := squatter.StdoutPipe()
		if err := squatter.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { squatter.Process.Kill(); squatter.Wait() })
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "listening\n" {
			t.Fatalf("node listener: %q, %v", line, err)
		}
		r := doctorCLI(t, m, version)
		wantDoctorFails(t, r, "port:acme-shop", "127.0.0.1:"+strconv.Itoa(port)+" is taken by pid "+strconv.Itoa(squatter.Process.Pid)+" (node", "stop that process")
		if line := r.line("manager"); !strings.HasPrefix(line, "WARN") || !strings.Contains(line, "no manager is running") {
			t.Errorf("doctor manager line with the manager stopped %q; want a warning that none runs", line)
		}

		j := doctorCLI(t, m, version, "--json")
		var checks []doctor.Check
		if err := json.Unmarshal([]byte(j.out), &checks); err != nil || j.code != 1 {
			t.Fatalf("doctor --json: exit %d, %v\n%s", j.code, err, j.out)
		}
		found := false
		for _, c := range checks {
			if c.Name == "port:acme-shop" {
				found = c.Status == doctor.Fail && c.Fix != "" && strings.Contains(c.Detail, "is taken by pid")
			}
		}
		if !found {
			t.Errorf("doctor --json lacks a failed port:acme-shop check with its fix:\n%s", j.out)
		}
	})
}
