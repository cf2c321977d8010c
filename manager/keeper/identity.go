package keeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"vibebrowser/mux/cdpwire"
)

// Format is the version of the identity file and of the hello (cdpwire.Format): a keeper of another format
// is never adopted.
const Format = cdpwire.Format

// Identity is run/keep-<key>.json: who holds the pipe and whose browser it is.
type Identity struct {
	Format       int    `json:"format"`
	Key          string `json:"key"`
	Socket       string `json:"socket"`  // absolute path of the keeper's socket
	Profile      string `json:"profile"` // absolute --user-data-dir of the browser
	KeeperPID    int    `json:"keeper_pid"`
	KeeperStart  int64  `json:"keeper_start"` // ms since the epoch (procid)
	BrowserPID   int    `json:"browser_pid"`
	BrowserStart int64  `json:"browser_start"` // ms since the epoch (procid)
	BrowserPGID  int    `json:"browser_pgid"`  // Chromium's own process group
}

// SocketPath is the keeper's socket of the browser key in runDir.
func SocketPath(runDir, key string) string { return filepath.Join(runDir, "keep-"+key+".sock") }

// IdentityPath is the keeper's identity file of the browser key in runDir.
func IdentityPath(runDir, key string) string { return filepath.Join(runDir, "keep-"+key+".json") }

// LogPath is where the launcher sends the keeper's and Chromium's stdout and stderr.
func LogPath(runDir, key string) string { return filepath.Join(runDir, "keep-"+key+".log") }

// ForwardStatusPath is where the keeper of browser key says how its proxy forwarder's upstream is doing
// (ForwardStatus); there is none while it works, or without a proxy.
func ForwardStatusPath(runDir, key string) string {
	return filepath.Join(runDir, "forward-"+key+".json")
}

// ForwardStatus is a failing upstream, as the store's page and `status` show it: the failure (never the
// password: the forwarder's errors name the proxy's host only) and since when.
type ForwardStatus struct {
	Error string    `json:"error"`
	Since time.Time `json:"since"`
}

// ReadForwardStatus reads the forwarder's status file; no file is no failure (a zero ForwardStatus).
func ReadForwardStatus(path string) (ForwardStatus, error) {
	var st ForwardStatus
	b, err := readSmall(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

// ReadIdentity reads an identity file; one of another format is an error naming both. Like OpenLog it reads
// only a regular file, never through a symlink.
func ReadIdentity(path string) (Identity, error) {
	b, err := readSmall(path)
	if err != nil {
		return Identity{}, err
	}
	var id Identity
	if err := json.Unmarshal(b, &id); err != nil {
		return Identity{}, fmt.Errorf("%s: %w", path, err)
	}
	if id.Format != Format {
		return Identity{}, fmt.Errorf("%s: format %d, want %d", path, id.Format, Format)
	}
	return id, nil
}

// Config is one keeper's launch: what Command puts on its command line and Main reads back.
type Config struct {
	Key     string   // the browser's key (a store id or a reserved key)
	RunDir  string   // the home's run/ directory: the socket and identity file go there
	Profile string   // Chromium's --user-data-dir, absolute
	Binary  string   // Chromium
	Args    []string // Chromium's arguments; they must hold --remote-debugging-pipe
	// ForwardPort, when set, is the loopback port of the store's proxy forwarder (SPEC §16), which the keeper
	// runs for Chromium; the upstream's URL is the first line of the keeper's stdin, never an argument.
	// ForwardStore names the store on its error page.
	ForwardPort  int
	ForwardStore string
	// OrphanStop, when set, is how long the keeper keeps Chromium without a client (its manager gone) before
	// it stops it as for SIGTERM (SPEC §19: in a cluster, a browser must not outlive its manager past the
	// store's lease). 0: it keeps Chromium for the next manager to adopt, however long that takes.
	OrphanStop time.Duration
}

// Command is the keeper's argv after the program itself: exe then these runs the keeper (the launcher
// passes "keep" first to reach it through the vibe-browser CLI).
func Command(c Config) []string {
	args := []string{"--key", c.Key, "--run-dir", c.RunDir, "--profile", c.Profile}
	if c.ForwardPort > 0 {
		args = append(args, "--forward-port", strconv.Itoa(c.ForwardPort), "--forward-store", c.ForwardStore)
	}
	if c.OrphanStop > 0 {
		args = append(args, "--orphan-stop", c.OrphanStop.String())
	}
	return append(append(args, "--", c.Binary), c.Args...)
}
