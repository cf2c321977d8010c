package doctor

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"vibebrowser/manager/chrome"
	"vibebrowser/manager/keeper"
	"vibebrowser/mux/sys/procid"
	"vibebrowser/state"
)

// transport says how launched browsers are reached (SPEC §13): on the pipe, through keepers, nothing of theirs
// listens on TCP; on a port (VIBE_CHROME_TRANSPORT=port) any local process reaches them around the mux. It
// names the keepers running, and a stale identity file of one that is gone.
func (m *machine) transport() Check {
	const name = "transport"
	running, stale := keepers(m.cfg.KeeperDirs())
	kept := "no keeper running"
	if len(running) > 0 {
		kept = fmt.Sprintf("%d keeper(s) running: %s", len(running), strings.Join(running, ", "))
	}
	if len(stale) > 0 {
		return warn(name, "keeper identity files of keepers that are gone: "+strings.Join(stale, ", "),
			"nothing holds those browsers' pipes any more; the next start of each browser removes its file")
	}
	if m.cfg.ChromeTransport == string(chrome.TransportPort) {
		return warn(name, "VIBE_CHROME_TRANSPORT=port: launched Chromium listens on a loopback debugging port with no "+
			"authentication, which any local process reaches around the mux and its token ("+kept+")",
			"unset VIBE_CHROME_TRANSPORT (the pipe is the default) unless this Chromium build lacks --remote-debugging-pipe")
	}
	return ok(name, "launched browsers are on a pipe held by their keeper: nothing of theirs listens on TCP ("+kept+")")
}

// keepers reads the keeper identity files in dirs: "<key> (keeper pid P, browser pid B)" for each live keeper,
// and the keys of those whose keeper is gone.
func keepers(dirs []string) (running, stale []string) {
	var files []string
	for _, dir := range dirs {
		found, _ := filepath.Glob(filepath.Join(dir, "keep-*.json"))
		files = append(files, found...)
	}
	sort.Strings(files)
	for _, f := range files {
		id, err := keeper.ReadIdentity(f)
		key := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "keep-"), ".json")
		if err == nil && procid.LiveAs(context.Background(), id.KeeperPID, id.KeeperStart) {
			running = append(running, fmt.Sprintf("%s (keeper pid %d, browser pid %d)", key, id.KeeperPID, id.BrowserPID))
			continue
		}
		stale = append(stale, key)
	}
	return running, stale
}

// portsOfOthers names the stores whose browsers are someone else's (Ziniao, cdp): they keep their debugging
// ports, which any local user can reach.
func (m *machine) portsOfOthers() Check {
	const name = "debugging-ports"
	var others []string
	for _, s := range m.stores {
		if s.Backend == state.BackendZiniao || s.Backend == state.BackendCDP {
			others = append(others, fmt.Sprintf("%s (%s)", s.Slug, s.Backend))
		}
	}
	if len(others) == 0 {
		return ok(name, "no store's browser is reached on a debugging port of its own")
	}
	sort.Strings(others)
	return warn(name, "these stores' browsers are someone else's and keep their debugging ports, which any local "+
		"user can reach around the mux: "+strings.Join(others, ", "),
		"run them where no other local user logs in, or as chrome stores, which are reached on a pipe")
}
