package keeper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"vibebrowser/mux/pipewire"
)

// Format is the version of the identity file and the hello; a keeper of another format is never adopted.
const Format = 1

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

// ReadIdentity reads an identity file; one of another format is an error naming both.
func ReadIdentity(path string) (Identity, error) {
	b, err := os.ReadFile(path)
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
	Limit   int      // the largest message a client may send (the mux's client limit); 0: 100 MB
	Binary  string   // Chromium
	Args    []string // Chromium's arguments; they must hold --remote-debugging-pipe
}

// Command is the keeper's argv after the program itself: exe then these runs the keeper (the launcher
// passes "keep" first to reach it through the vibe-browser CLI).
func Command(c Config) []string {
	args := []string{"--key", c.Key, "--run-dir", c.RunDir, "--profile", c.Profile}
	if c.Limit > 0 {
		args = append(args, "--limit", strconv.Itoa(c.Limit))
	}
	return append(append(args, "--", c.Binary), c.Args...)
}

// Hello is what a keeper says first on each connection.
type Hello struct {
	Format     int    `json:"format"`
	PID        int    `json:"pid"`
	BrowserPID int    `json:"browser_pid"`
	Refused    string `json:"refused,omitempty"`
}

// ErrRefused: the keeper serves another client.
var ErrRefused = errors.New("keeper refused the connection")

// helloTimeout bounds the wait for a keeper's hello: a live keeper writes it at once.
const helloTimeout = 5 * time.Second

// Dial connects to the keeper's socket and reads its hello. The connection is the caller's, positioned after
// the hello; br holds what was read past it. A refusal is ErrRefused with the keeper's reason.
func Dial(ctx context.Context, socket string) (net.Conn, *bufio.Reader, Hello, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, nil, Hello{}, err
	}
	deadline := time.Now().Add(helloTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	nc.SetReadDeadline(deadline)
	br := bufio.NewReaderSize(nc, 64<<10)
	b, _, err := pipewire.ReadMessage(br, 64<<10)
	if err != nil {
		nc.Close()
		return nil, nil, Hello{}, fmt.Errorf("keeper %s: no hello: %w", socket, err)
	}
	nc.SetReadDeadline(time.Time{})
	var msg struct {
		Keeper *Hello `json:"keeper"`
	}
	if err := json.Unmarshal(b, &msg); err != nil || msg.Keeper == nil {
		nc.Close()
		return nil, nil, Hello{}, fmt.Errorf("keeper %s: its first message is not a hello: %.100q", socket, b)
	}
	h := *msg.Keeper
	if h.Refused != "" {
		nc.Close()
		return nil, nil, h, fmt.Errorf("%w: %s", ErrRefused, h.Refused)
	}
	if h.Format != Format {
		nc.Close()
		return nil, nil, h, fmt.Errorf("keeper %s: format %d, want %d", socket, h.Format, Format)
	}
	return nc, br, h, nil
}
