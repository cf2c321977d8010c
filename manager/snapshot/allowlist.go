package snapshot

import (
	"path"
	"slices"
	"strings"
)

// What a snapshot keeps of a profile, by its path inside the profile (slash-separated): the login and the
// sites' storage, never a cache. Names as Chromium (Linux, macOS) writes them; a file a version does not
// write is simply absent.
var (
	// keptFiles are single files. Each SQLite database goes with its journal: a clean stop leaves the
	// journal empty, and a database without a hot journal it needs would be torn.
	keptFiles = withJournals([]string{
		"Local State",
		"Default/Preferences",
		"Default/Secure Preferences",
		portableMarker,
	}, []string{
		"Default/Cookies",
		"Default/Network/Cookies", // where newer versions and other platforms keep it
		"Default/Login Data",
		"Default/Login Data For Account",
		"Default/Web Data",
	})
	// keptTrees are folders kept whole but for the LevelDB run files (a lock and its logs): Local Storage,
	// Session Storage and IndexedDB, and WebStorage, the storage buckets' index where IndexedDB of newer
	// versions and partitioned storage live.
	keptTrees = []string{
		"Default/Local Storage",
		"Default/Session Storage",
		"Default/IndexedDB",
		"Default/WebStorage",
	}
	// runFiles are a LevelDB's lock and logs: Chromium makes them at each open.
	runFiles = []string{"LOCK", "LOG", "LOG.old"}
	// liveFiles are what a running browser's snapshot reads from its profile: JSON files Chromium replaces
	// whole (a temp file and a rename), so a copy is consistent while it runs. Its databases are open and
	// written in place; they come from the snapshot before.
	liveFiles = []string{"Local State", "Default/Preferences", "Default/Secure Preferences", portableMarker}
)

// portableMarker is logins.PortableMarker: a profile that launches with Chromium's own password store (its
// cookies readable on any machine) says so, and a profile made from a snapshot must say it too.
const portableMarker = "vibe-portable"

func withJournals(plain, databases []string) []string {
	out := slices.Clone(plain)
	for _, db := range databases {
		out = append(out, db, db+"-journal", db+"-wal")
	}
	return out
}

// Kept reports whether the file at rel (slash-separated, inside the profile) is in a snapshot.
func Kept(rel string) bool {
	if !validRel(rel) {
		return false
	}
	if slices.Contains(keptFiles, rel) {
		return true
	}
	for _, tree := range keptTrees {
		if strings.HasPrefix(rel, tree+"/") {
			return !slices.Contains(runFiles, path.Base(rel))
		}
	}
	return false
}

// descend reports whether the folder at rel may hold a kept file: the walk enters nothing else.
func descend(rel string) bool {
	if !validRel(rel) {
		return false
	}
	for _, tree := range keptTrees {
		if rel == tree || strings.HasPrefix(rel, tree+"/") {
			return true
		}
	}
	for _, f := range keptFiles {
		if strings.HasPrefix(f, rel+"/") {
			return true
		}
	}
	return false
}

// validRel: a clean relative slash path with no "..", no empty or "." element.
func validRel(rel string) bool {
	if rel == "" || rel == "." || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel || strings.ContainsRune(rel, 0) {
		return false
	}
	for _, el := range strings.Split(rel, "/") {
		if el == ".." || el == "." || el == "" {
			return false
		}
	}
	return true
}
