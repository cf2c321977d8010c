// Package downloads holds the files side of a mux's downloads: the folders, the names, the record of a finished download and placing its file where its owner finds it.
package downloads

import "time"

// The mux owns the browser's downloads (mux/downloads.go routes their events): a download is filed under
// the download folder in its owner's folder, with a sanitised, unique name, and also put where its client
// asked. This package is what that filing does with files; it knows nothing of CDP.

// Folders under a mux's download folder (mux.Config.DownloadDir) that are not an owner's.
const (
	// IncomingDir is where Chrome writes downloads in progress (as <guid>.crdownload, then <guid>).
	IncomingDir = ".incoming"
	// UnattributedDir holds downloads no client owns (a person's own window, a tab nobody created). A
	// download is never given to a client that did not start it.
	UnattributedDir = "unattributed"
)

// PartialSuffix ends the temporary name of a file the mux is still copying; a file with it is never
// complete, so the manager's boot sweep may remove it.
const PartialSuffix = ".vibe-partial"

// MaxNameBytes bounds a downloaded file's name, its " (N)" included.
const MaxNameBytes = 200

// FallbackName names a download whose suggested name sanitises to nothing.
const FallbackName = "download"

// Download is a finished download, reported through the mux's Hooks.Downloaded.
type Download struct {
	GUID     string    // Chrome's download id
	ClientID string    // the client that owns it; "" when unattributed
	OwnerDir string    // the folder under the download folder: clientid.OwnerDir(ClientID), or UnattributedDir
	URL      string    // what was downloaded
	Name     string    // the file's name in OwnerDir (sanitised, made unique)
	Path     string    // the file
	Size     int64     // bytes
	SHA256   string    // hex
	At       time.Time // when it completed
	// Host is the host whose door the owning client connected through, "" for this host: the file is
	// delivered to that host too (SPEC §19).
	Host string
}

// OwnCopy is a client's request for its own copy of a download: the downloadPath of its
// Browser.setDownloadBehavior (or Page's), which playwright, puppeteer and browser-harness read the file from.
type OwnCopy struct {
	Dir   string // the client's downloadPath, absolute
	Exact bool   // allowAndName: at Dir/<guid>; allow: under the first free unique name in Dir
}
