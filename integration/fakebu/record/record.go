// Package record is what the fake browser-use CLI saw on each call: the fake writes one file per call and tests read them back.
package record

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Call is what one call of the fake CLI saw.
type Call struct {
	Args    []string  `json:"args"`
	Env     []string  `json:"env"`
	Stdin   []byte    `json:"stdin"`
	PID     int       `json:"pid"`
	PGID    int       `json:"pgid"`
	Signals []string  `json:"signals,omitempty"`
	At      time.Time `json:"at"`
	// Harness is the browser-harness behaviour the fake played (FAKEBU_HARNESS): "0.1.9" or "0.1.12".
	Harness string `json:"harness"`
	// Tab is the session daemon's dedicated tab as this call left it; nil when no daemon was involved.
	Tab *Tab `json:"tab,omitempty"`
}

// Tab is a fake daemon's dedicated tab.
type Tab struct {
	Title string `json:"title"` // with the harness's marker in front unless BH_TAB_MARKER turned it off
	Open  bool   `json:"open"`  // false once a --reload closed it (0.1.12); 0.1.9 leaves it open
}

// Getenv returns the value of name in the call's environment and whether it was set.
func (c Call) Getenv(name string) (string, bool) {
	for _, kv := range c.Env {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v, true
		}
	}
	return "", false
}

// Write saves c into dir, replacing an earlier save of the same call. The file is renamed into place so a
// reader never sees half of it, and its name sorts by the call's start.
func Write(dir string, c Call) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	name := filepath.Join(dir, fmt.Sprintf("%d-%d.json", c.At.UnixNano(), c.PID))
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// Read returns the calls saved in dir, in the order they started.
func Read(dir string) ([]Call, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ent := range entries {
		if strings.HasSuffix(ent.Name(), ".json") {
			names = append(names, ent.Name())
		}
	}
	sort.Strings(names)
	calls := make([]Call, 0, len(names))
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		var c Call
		if err := json.Unmarshal(data, &c); err != nil {
			return nil, fmt.Errorf("record %s: %w", n, err)
		}
		calls = append(calls, c)
	}
	return calls, nil
}
