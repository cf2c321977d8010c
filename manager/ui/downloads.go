package ui

import (
	"fmt"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/mux/downloads"
)

// The store page's downloads (SPEC §12): each owner's files (a task's, aux, manual, human, unattributed),
// the owner with the newest file first, each owner's newest files first.

// maxDownloadRows bounds the files listed per owner; the rest are counted (vibe-browser downloads lists all).
const maxDownloadRows = 20

// maxDownloads bounds the downloads the store page reads (again whenever the manager's state changed).
const maxDownloads = 500

type downloadGroup struct {
	Owner string // the folder under downloads/<slug>/
	Page  string // the task page of a task's folder; "" for the others
	Label string
	Count string // "3 files", with how many are not shown
	Files []downloadRow
}

type downloadRow struct {
	Name string
	Size string
	At   string // "5 min ago"
	Path string
	URL  string
}

// downloadGroups groups ds (oldest first, as the manager lists them) by owner folder.
func downloadGroups(ds []api.Download, tasks map[string]bool, now time.Time) []downloadGroup {
	byOwner := map[string]*downloadGroup{}
	var order []string // owners, the one with the newest file first (ds is walked newest first)
	counts := map[string]int{}
	for i := len(ds) - 1; i >= 0; i-- {
		d := ds[i]
		g := byOwner[d.OwnerDir]
		if g == nil {
			g = &downloadGroup{Owner: d.OwnerDir, Label: ownerLabel(d.OwnerDir, tasks), Files: []downloadRow{}}
			if d.OwnerDir != downloads.UnattributedDir && (tasks[d.OwnerDir] || api.ValidTaskID(d.OwnerDir)) {
				g.Page = taskHref(d.OwnerDir)
			}
			byOwner[d.OwnerDir] = g
			order = append(order, d.OwnerDir)
		}
		counts[d.OwnerDir]++
		if len(g.Files) < maxDownloadRows {
			g.Files = append(g.Files, downloadRow{Name: d.Name, Size: byteSize(d.Size), At: duration(now.Sub(d.At)) + " ago",
				Path: d.Path, URL: d.URL})
		}
	}
	out := make([]downloadGroup, 0, len(order))
	for _, o := range order {
		g, n := byOwner[o], counts[o]
		g.Count = plural(n, "file")
		if n > len(g.Files) {
			g.Count += fmt.Sprintf(" (the newest %d shown)", len(g.Files))
		}
		out = append(out, *g)
	}
	return out
}

// ownerLabel says what an owner folder is, in words.
func ownerLabel(owner string, tasks map[string]bool) string {
	switch {
	case owner == downloads.UnattributedDir:
		return "downloads of tabs no client here opened"
	case tasks[owner] || api.ValidTaskID(owner):
		return "task (its --worker slots included)"
	}
	_, label := clientKind(owner, tasks)
	return label
}

// byteSize is n bytes for a person.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
