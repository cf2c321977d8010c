package chrome

import (
	"fmt"
	"runtime"
	"strings"
)

// baseFlags are passed to every launch (SPEC §4.6). --enable-automation is deliberately absent: it shows the
// "controlled by automated software" bar and flags the session to sites.
var baseFlags = []string{
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-popup-blocking",
}

// portableFlags keep a profile's cookies under Chromium's own key, not the OS keyring's (which ties them to
// one user on one machine), so a profile restores anywhere (SPEC §18, Options.Portable).
var portableFlags = map[string][]string{
	"linux":  {"--password-store=basic"},
	"darwin": {"--use-mock-keychain"},
}[runtime.GOOS]

// reservedFlags may not appear in Options.ExtraArgs: the package owns them.
var reservedFlags = []string{"--enable-automation", "--user-data-dir", "--remote-debugging-port", "--remote-debugging-pipe"}

// buildArgs returns Chromium's command line (without the binary) for o.
func buildArgs(o Options) ([]string, error) {
	for _, a := range o.ExtraArgs {
		for _, r := range reservedFlags {
			if a == r || strings.HasPrefix(a, r+"=") {
				return nil, fmt.Errorf("extra argument %q is managed by the launcher: %w", a, ErrInvalid)
			}
		}
	}
	args := make([]string, 0, len(baseFlags)+4+len(o.ExtraArgs))
	args = append(args, "--user-data-dir="+o.ProfileDir)
	if o.Transport == TransportPort {
		args = append(args, "--remote-debugging-port=0")
	} else {
		args = append(args, "--remote-debugging-pipe")
	}
	args = append(args, baseFlags...)
	if o.Portable {
		args = append(args, portableFlags...)
	}
	if o.Headless {
		args = append(args, "--headless", "--disable-gpu")
	}
	if o.NoSandbox {
		args = append(args, "--no-sandbox")
	}
	args = append(args, o.Identity.args()...)
	args = append(args, o.ExtraArgs...)
	return args, nil
}
