package chrome

import (
	"fmt"
	"runtime"
	"slices"
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

// headlessDisabledFeatures are Chromium features a headless store browser has no use for: the omnibox's
// WebUI popups, which Chromium preloads at every launch into a renderer of their own. Measured here
// (Chromium 156, headless): a launch took 3.3 CPU-seconds with them and 1.8 without, and the renderer held
// 160 MB. Nobody types into a headless browser's address bar.
var headlessDisabledFeatures = []string{"WebUIOmniboxPopup", "WebUIOmniboxAimPopup"}

// disableFeaturesFlag is Chromium's switch for turning features off; of several, it reads only the last.
const disableFeaturesFlag = "--disable-features="

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
	var disabled []string
	if o.Headless {
		disabled = headlessDisabledFeatures
	}
	return append(args, withDisabledFeatures(o.ExtraArgs, disabled)...), nil
}

// withDisabledFeatures returns extra with features turned off as well, in one --disable-features switch that
// also holds every one the caller gave (Chromium reads only one of several).
func withDisabledFeatures(extra, features []string) []string {
	if len(features) == 0 {
		return extra
	}
	all := slices.Clone(features)
	out := make([]string, 0, len(extra)+1)
	for _, a := range extra {
		if v, ok := strings.CutPrefix(a, disableFeaturesFlag); ok {
			if v != "" {
				all = append(all, v)
			}
			continue
		}
		out = append(out, a)
	}
	return append(out, disableFeaturesFlag+strings.Join(all, ","))
}
