package chrome

import (
	"os"
	"slices"
	"strings"
)

// browserEnvNames are the variables of the manager's environment that a keeper and its Chromium get (SPEC
// §20): what Chromium needs to find its programs, folders, locale, fonts and display. Anything else stays
// with the manager: its secrets (VIBE_ZINIAO_PASSWORD, a cloud API key), its other VIBE_* settings, and
// CHROMIUM_FLAGS, through which Debian's chromium script would add switches that Launch refuses. The
// keeper itself reads nothing from its environment: its whole configuration is its argv (and the proxy on
// its stdin).
var browserEnvNames = []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TZ", "LANG", "LANGUAGE",
	"DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "XDG_SESSION_TYPE", "XDG_CURRENT_DESKTOP",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
	"DBUS_SESSION_BUS_ADDRESS", "FONTCONFIG_FILE", "FONTCONFIG_PATH", "FONTCONFIG_SYSROOT"}

// browserEnvPrefixes are families of variables passed as browserEnvNames are: the locale's categories, and
// Chromium's own (CHROME_DEVEL_SANDBOX, CHROME_LOG_FILE, CHROME_CONFIG_HOME…).
var browserEnvPrefixes = []string{"LC_", "CHROME_"}

// proxyEnvNames are the operator's proxy settings, which Chromium follows when it has no --proxy-server: a
// store without a proxy of its own reaches the web as the manager's machine does; one with a proxy gets
// none of them (its traffic leaves through its forwarder only, and they may hold credentials).
var proxyEnvNames = []string{"http_proxy", "https_proxy", "all_proxy", "no_proxy", "auto_proxy",
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}

// environ is the browser's environment, its keeper's too (which passes it on to Chromium): the manager's,
// cut to what a browser needs (browserEnv).
func environ(o Options) []string { return browserEnv(os.Environ(), o) }

// browserEnv is the environment of a browser launched with o, from base (the manager's): only the variables
// browserEnvNames and browserEnvPrefixes name (and proxyEnvNames for a store without a proxy), TZ set to
// the store's time zone when it has one, and, run as another user, that user's HOME, USER and LOGNAME and
// none of the manager's own folders (userEnv).
func browserEnv(base []string, o Options) []string {
	env := make([]string, 0, len(browserEnvNames)+2)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if name == "TZ" && o.Identity.Timezone != "" {
			continue
		}
		if passedToBrowser(name, o.Identity.Proxy != "") {
			env = append(env, kv)
		}
	}
	if o.Identity.Timezone != "" {
		env = append(env, "TZ="+o.Identity.Timezone)
	}
	if o.User != nil {
		env = userEnv(env, o.User, userHome(o.ProfileDir))
	}
	return env
}

// passedToBrowser reports whether the manager's variable name reaches a browser; hasProxy is whether its
// store has a proxy of its own.
func passedToBrowser(name string, hasProxy bool) bool {
	if slices.Contains(browserEnvNames, name) {
		return true
	}
	for _, p := range browserEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return !hasProxy && slices.Contains(proxyEnvNames, name)
}
