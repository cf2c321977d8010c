package doctor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"vibebrowser/manager/service"
)

// service reports the systemd unit (user and system) or launchd plist: installed, enabled, and running
// this binary on this home.
func (m *machine) service() Check {
	kinds := []bool{true, false} // user, then system
	if runtime.GOOS == "darwin" {
		kinds = kinds[:1] // one plist either way
	}
	var details, fixes []string
	status := OK
	worse := func(s Status) {
		if s == Fail || status == OK {
			status = s
		}
	}
	for _, user := range kinds {
		u, err := service.Installed(user)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		flag := map[bool]string{true: " --user", false: ""}[user]
		if err != nil {
			worse(Fail)
			details = append(details, err.Error())
			fixes = append(fixes, "rewrite it: vibe-browser service install"+flag)
			continue
		}
		d := u.Path + " runs " + u.Exe + " on " + u.Home
		if u.Enabled {
			d += ", enabled"
		}
		switch {
		case !isExecutable(u.Exe):
			worse(Fail)
			d += "; that binary is missing"
			fixes = append(fixes, "rewrite it for this binary: vibe-browser service install"+flag)
		case !sameFile(u.Exe, m.o.Exe):
			worse(Warn)
			d += "; not this vibe-browser (" + m.o.Exe + ")"
			fixes = append(fixes, "if this is the binary to run: vibe-browser service install"+flag)
		}
		if u.Home != m.cfg.Home {
			worse(Warn)
			d += "; a home other than " + m.cfg.Home
			fixes = append(fixes, "install it from a shell with this VIBE_HOME: vibe-browser service install"+flag)
		}
		if !u.Enabled {
			worse(Warn)
			d += ", not enabled"
			fixes = append(fixes, "systemctl"+flag+" enable --now vibe-browser")
		}
		details = append(details, d)
	}
	if len(details) == 0 {
		return ok("service", "not installed (optional: vibe-browser service install --user runs the manager at boot)")
	}
	return Check{Name: "service", Status: status, Detail: strings.Join(details, "; "), Fix: strings.Join(fixes, "; ")}
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0
}

// sameFile reports whether a and b name one file, through symlinks.
func sameFile(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}
