package doctor

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// sitePackages returns the site-packages directories of the Python that runs the console script at path,
// the one its #! line names (uv and pipx install browser-use so, into a venv of its own): the lib/python3.*
// directories of that interpreter's prefix, as named (a venv's bin/python is a symlink to the base
// Python, whose prefix holds other packages) and then through its symlinks.
func sitePackages(path string) []string {
	interp := shebang(path)
	if len(interp) == 0 {
		return nil
	}
	py := interp[0]
	if filepath.Base(py) == "env" { // #!/usr/bin/env python3 [-S]: the first word that is not a flag
		py = ""
		for _, w := range interp[1:] {
			if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
				py, _ = exec.LookPath(w)
				break
			}
		}
		if py == "" {
			return nil
		}
	}
	pys := []string{py}
	if real, err := filepath.EvalSymlinks(py); err == nil && real != py {
		pys = append(pys, real)
	}
	var dirs []string
	for _, p := range pys {
		prefix := filepath.Dir(filepath.Dir(p))
		for _, pattern := range []string{"lib/python3*/site-packages", "lib64/python3*/site-packages", "lib/python3*/dist-packages",
			"lib/python3/dist-packages", "Lib/site-packages"} {
			found, _ := filepath.Glob(filepath.Join(prefix, pattern))
			dirs = append(dirs, found...)
		}
	}
	return dirs
}

// distVersion returns the version of the installed distribution name (as PyPI spells it, e.g.
// "browser-use") found first in dirs: the Version of its <name>-<version>.dist-info/METADATA whose Name
// matches; "" when none does.
func distVersion(dirs []string, name string) string {
	want := normalizeDist(name)
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			// <name>-<version>.dist-info; a wheel's version has no '-' (it is escaped to '_').
			base, isDist := strings.CutSuffix(e.Name(), ".dist-info")
			i := strings.LastIndex(base, "-")
			if !isDist || !e.IsDir() || i <= 0 || normalizeDist(base[:i]) != want {
				continue
			}
			got, version := readMetadata(filepath.Join(dir, e.Name(), "METADATA"))
			if normalizeDist(got) == want && version != "" {
				return version
			}
		}
	}
	return ""
}

// readMetadata reads the Name and Version headers of a core metadata file (RFC 822 headers, ended by a
// blank line).
func readMetadata(path string) (name, version string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "name":
			name = strings.TrimSpace(v)
		case "version":
			version = strings.TrimSpace(v)
		}
	}
	return name, version
}

var distSeparators = regexp.MustCompile(`[-_.]+`)

// normalizeDist is a distribution name's normalized form (PEP 503): lower case, runs of -_. as one '-'.
func normalizeDist(name string) string {
	return distSeparators.ReplaceAllString(strings.ToLower(name), "-")
}
