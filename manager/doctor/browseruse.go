package doctor

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"

	"vibebrowser/manager/api"
)

// browserUse checks the real browser-use CLI agents' calls end in and its release against Tested. When a
// manager answers, that manager's CLI decides (it is baked into the wrappers; it may have come from a
// VIBE_BROWSER_USE this shell lacks), and what this shell would find is a note beside it. With none, it is
// the CLI serve would find here (config.FromEnv's resolution: VIBE_BROWSER_USE, else the first browser-use
// on PATH outside the home's bin).
func (m *machine) browserUse(ctx context.Context) Check {
	here := m.cfg.BrowserUse
	hereHow := api.BrowserUseFromPath
	if m.o.Getenv("VIBE_BROWSER_USE") != "" {
		hereHow = api.BrowserUseFromEnv
	}
	// The manager's problem line ends with its own remedy; the fix column says it better here.
	hereProblem, _, _ := strings.Cut(m.cfg.BrowserUseProblem, "; ")
	installFix := InstallFix() + ", or set VIBE_BROWSER_USE to its absolute path; then restart the manager"
	if m.mgr == nil {
		if here == "" {
			return fail("browser-use", hereProblem, installFix)
		}
		return m.browserUseRelease(ctx, here, where(here, hereHow))
	}
	if m.mgr.BrowserUse == "" {
		problem, _, _ := strings.Cut(m.mgr.BrowserUseErr, "; ")
		c := fail("browser-use", "the running manager has no browser-use CLI: "+problem, installFix)
		if here != "" {
			c.Detail += "; this shell finds " + where(here, hereHow)
			c.Fix = "restart the manager from this shell (or with VIBE_BROWSER_USE=" + here + ") so that it finds " + here
		}
		return c
	}
	c := m.browserUseRelease(ctx, m.mgr.BrowserUse, "the running manager's "+where(m.mgr.BrowserUse, m.mgr.BrowserUseFrom))
	switch {
	case here == "":
		c.Detail += "; note: this shell finds none (" + hereProblem + "), which only matters to a manager started from here"
	case here != m.mgr.BrowserUse:
		c.Detail += "; note: a manager started from this shell would use " + where(here, hereHow)
	}
	return c
}

// where names a CLI's path and how it was found.
func where(path, how string) string {
	switch how {
	case api.BrowserUseFromEnv:
		return path + " (VIBE_BROWSER_USE)"
	case api.BrowserUseFromPath:
		return path + " (first on PATH)"
	}
	return path
}

// browserUseRelease reads which browser-use and browser-harness the CLI at path runs and compares them with
// the tested releases: from the installed packages' metadata beside its interpreter, which is exact, else
// from its --version, which browser-use 0.13.8 answers with its browser-harness's version.
func (m *machine) browserUseRelease(ctx context.Context, path, where string) Check {
	if !isExecutable(path) {
		return fail("browser-use", where+": no executable file there: agents' calls exit 127",
			"reinstall it ("+InstallFix()+"), or set VIBE_BROWSER_USE to another and restart the manager")
	}
	site := sitePackages(path)
	bu, harness := distVersion(site, "browser-use"), distVersion(site, "browser-harness")
	found := where + ", package metadata"
	if bu == "" {
		line, err := firstLine(ctx, path, "--version")
		if err != nil {
			return warn("browser-use", where+": no package metadata, and --version failed: "+err.Error(), "reinstall it: "+InstallFix())
		}
		bu, harness = parseVersions(line)
		if bu == "" {
			return warn("browser-use", where+": no package metadata, and --version printed no version ("+line+"); tested: "+testedList(),
				"install a tested release: "+InstallFix())
		}
		found = where + ", --version " + strconv.Quote(line)
		if _, tested := testedRelease(bu); !tested && harness == "" && isTestedHarness(bu) {
			return warn("browser-use", found+": "+bu+" is a browser-harness version (browser-use 0.13.8's --version prints its "+
				"browser-harness's), and no package metadata says which browser-use this is (tested: "+testedList()+")",
				"nothing, if this is browser-use 0.13.8 on browser-harness "+bu+"; else install a tested release: "+InstallFix())
		}
	}
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

// shebang returns the interpreter command of a script's #! line, nil for anything else. When the line is a
// shell, pip's form for an interpreter path too long for #! (an exec line on the next line naming the
// Python in double quotes) gives the Python.
func shebang(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, 1024)
	n, _ := f.Read(buf)
	first, rest, _ := strings.Cut(string(buf[:n]), "\n")
	line, found := strings.CutPrefix(first, "#!")
	if !found {
		return nil
	}
	if m := pipExecRE.FindStringSubmatch(rest); m != nil && strings.HasSuffix(strings.TrimSpace(line), "sh") {
		return []string{m[1]}
	}
	return strings.Fields(line)
}

var pipExecRE = regexp.MustCompile(`\A'''exec' "([^"]+)"`)

func isTestedHarness(v string) bool {
	for _, r := range Tested {
		if r.Harness == v {
			return true
		}
	}
	return false
}
