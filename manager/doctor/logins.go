package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/snapshot"
	"vibebrowser/state"
)

// recentRebuild is how long a lost profile's rebuild is a warning: long enough for a person to see it.
const recentRebuild = 7 * 24 * time.Hour

// logins says, for each chrome store and the web browser (SPEC §18), how old its newest cookie checkpoint and
// snapshot are, and whether its profile was rebuilt from a snapshot or a broken one is kept aside.
func (m *machine) logins() []Check {
	var checks []Check
	slugs := map[string]string{} // the slug of its folders → the slug a person types
	var order []string
	for _, s := range m.storesOf(state.BackendChrome) {
		slugs[s.Slug] = s.Slug
		order = append(order, s.Slug)
	}
	if fileThere(filepath.Join(m.cfg.Home, "profiles", api.WebKey)) {
		slugs[api.WebKey] = api.WebSlug
		order = append(order, api.WebKey)
	}
	for _, slug := range order {
		checks = append(checks, m.login(slug, slugs[slug], time.Now()))
	}
	return checks
}

func (m *machine) login(slug, ref string, now time.Time) Check {
	name := "login:" + ref
	profile := filepath.Join(m.cfg.Home, "profiles", slug)
	var facts []string
	if fi, err := os.Stat(filepath.Join(m.cfg.Home, "logins", slug, "jar")); err == nil {
		facts = append(facts, "checkpoint "+age(now, fi.ModTime()))
	} else {
		facts = append(facts, "no cookie checkpoint yet")
	}
	all, err := snapshot.List(m.cfg.SnapshotDir, slug)
	switch {
	case err != nil:
		return warn(name, strings.Join(facts, "; ")+"; its snapshots cannot be listed: "+err.Error(),
			"check VIBE_SNAPSHOT_DIR ("+m.cfg.SnapshotDir+") and its permissions")
	case len(all) > 0:
		facts = append(facts, fmt.Sprintf("snapshot %s (%s; %d kept in %s)", age(now, all[0].At), all[0].ID, len(all),
			filepath.Dir(all[0].Path)))
	}
	broken, _ := filepath.Glob(profile + ".broken-*")
	r, rebuilt := snapshot.LastRebuild(m.cfg.SnapshotDir, slug)
	switch {
	case len(broken) > 0:
		return warn(name, fmt.Sprintf("%s; Chromium would not start on its profile: it was kept aside as %s and the browser "+
			"runs on one rebuilt from a snapshot", strings.Join(facts, "; "), strings.Join(broken, ", ")),
			"look into the kept profile if you need to, then remove it: rm -rf "+shellQuote(broken[0]))
	case rebuilt && r.Why == snapshot.WhyLost && now.Sub(r.At) < recentRebuild:
		return warn(name, fmt.Sprintf("%s; its profile folder was lost and rebuilt from snapshot %s %s",
			strings.Join(facts, "; "), r.Snapshot, age(now, r.At)),
			"find what removed "+profile+" (a cleanup job, a disk replaced); the store's logins came back from the snapshot and checkpoint")
	case len(all) == 0 && fileThere(profile):
		return warn(name, strings.Join(facts, "; ")+"; no snapshot yet: a lost profile could not be rebuilt",
			"vibe-browser store snapshot "+ref+" (one is also taken at each clean stop of its browser)")
	case len(all) == 0:
		return ok(name, "its browser has not run yet")
	}
	if rebuilt {
		facts = append(facts, fmt.Sprintf("profile made from snapshot %s %s (%s)", r.Snapshot, age(now, r.At), r.Why))
	}
	return ok(name, strings.Join(facts, "; "))
}

// age says how long before now t was: "3m ago".
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String() + " ago"
	case d < 48*time.Hour:
		return d.Round(time.Minute).String() + " ago"
	}
	return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
}

func fileThere(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
