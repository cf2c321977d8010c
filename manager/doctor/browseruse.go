package doctor

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// browserUse checks the real browser-use CLI serve would bake into the wrappers (manager.FromEnv's
// resolution: VIBE_BROWSER_USE, else the first browser-use on PATH outside the home's bin), its version
// against Tested, and, when a manager answers, the CLI that manager found.
func (m *machine) browserUse(ctx context.Context) Check {
	path := m.cfg.BrowserUse
	if path == "" {
		// The manager's problem line ends with its own remedy; the fix column says it better here.
		problem, _, _ := strings.Cut(m.cfg.BrowserUseProblem, "; ")
		return fail("browser-use", problem, InstallFix()+", or set VIBE_BROWSER_USE to its absolute path; then restart the manager")
	}
	c := m.browserUseVersion(ctx, path)
	if m.mgr == nil || c.Status == Fail {
		return c
	}
	switch {
	case m.mgr.BrowserUse == "":
		return fail("browser-use", c.Detail+"; but the running manager has none: "+m.mgr.BrowserUseErr,
			"restart the manager so that it finds "+path)
	case m.mgr.BrowserUse != path:
		c.Detail += "; the running manager uses " + m.mgr.BrowserUse
		if c.Status == OK {
			c.Status, c.Fix = Warn, "restart the manager if its wrappers should run "+path
		}
	}
	return c
}

// browserUseVersion asks path its version and compares it with the tested releases.
func (m *machine) browserUseVersion(ctx context.Context, path string) Check {
	where := path + " (first on PATH)"
	if m.o.Getenv("VIBE_BROWSER_USE") != "" {
		where = path + " (VIBE_BROWSER_USE)"
	}
	line, err := firstLine(ctx, path, "--version")
	if err != nil {
		return warn("browser-use", where+": --version failed: "+err.Error(), "reinstall it: "+InstallFix())
	}
	bu, harness := parseVersions(line)
	if bu == "" {
		return warn("browser-use", where+": --version printed no version ("+line+"); tested: "+testedList(),
			"install a tested release: "+InstallFix())
	}
	found := where + ", --version " + strconv.Quote(line)
	rel, tested := testedRelease(bu)
	if !tested {
		return warn("browser-use", found+": browser-use "+bu+", which this release was not tested with (tested: "+testedList()+")",
			"install a tested release: "+InstallFix())
	}
	if harness == "" {
		harness = harnessVersion(ctx, path)
	}
	switch harness {
	case rel.Harness:
		return ok("browser-use", found+": browser-use "+bu+" on browser-harness "+harness+" (tested)")
	case "":
		return ok("browser-use", found+": browser-use "+bu+" (tested, with browser-harness "+rel.Harness+"; its browser-harness version could not be read)")
	}
	return warn("browser-use", found+": browser-use "+bu+" on browser-harness "+harness+", a pairing this release was not tested with (tested: "+testedList()+")",
		"install a tested release: "+InstallFix())
}

var (
	versionRE = regexp.MustCompile(`\bv?(\d+\.\d+\.\d+)\b`)
	harnessRE = regexp.MustCompile(`(?i)browser[-_]harness[^0-9]{0,12}v?(\d+\.\d+\.\d+)`)
)

// parseVersions reads `browser-use --version`: the browser-use version (the first version number not
// belonging to browser-harness) and browser-harness's, when the line names it.
func parseVersions(line string) (browserUse, harness string) {
	if h := harnessRE.FindStringSubmatchIndex(line); h != nil {
		harness = line[h[2]:h[3]]
		line = line[:h[0]] + line[h[1]:]
	}
	if v := versionRE.FindStringSubmatch(line); v != nil {
		browserUse = v[1]
	}
	return browserUse, harness
}

// harnessVersion asks the Python that runs the browser-use script (its #! line, as uv and pipx install it)
// which browser-harness it has; "" when that cannot be told.
func harnessVersion(ctx context.Context, path string) string {
	interp := shebang(path)
	if len(interp) == 0 || !strings.Contains(strings.Join(interp, " "), "python") {
		return ""
	}
	args := append(interp[1:], "-c", `import importlib.metadata as m; print(m.version("browser-harness"))`)
	line, err := firstLine(ctx, interp[0], args...)
	if err != nil {
		return ""
	}
	v, _ := parseVersions(line)
	return v
}

// shebang returns the interpreter command of a script's #! line, nil for anything else.
func shebang(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, _ := f.Read(buf)
	first, _, _ := strings.Cut(string(buf[:n]), "\n")
	rest, found := strings.CutPrefix(first, "#!")
	if !found {
		return nil
	}
	return strings.Fields(rest)
}
