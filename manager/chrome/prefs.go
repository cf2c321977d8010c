package chrome

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"vibebrowser/manager/atomicfile"
)

// restoreLastSession is Chromium's session.restore_on_startup value for "continue where you left off".
const restoreLastSession = 1

// prepareProfile makes the profile restore its previous session: it sets session.restore_on_startup = 1 in
// <profile>/Default/Preferences, keeping every other preference, and marks the last exit clean so a killed
// browser does not come back behind a "didn't shut down correctly" bubble. The file is written atomically.
// It returns the path of a corrupt Preferences file it moved aside, or "".
func prepareProfile(profileDir string) (movedAside string, err error) {
	dir := filepath.Join(profileDir, "Default")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("prepare profile: %w", err)
	}
	path := filepath.Join(dir, "Preferences")
	prefs := map[string]json.RawMessage{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if jerr := json.Unmarshal(data, &prefs); jerr != nil || prefs == nil {
			// Chromium itself resets an unreadable Preferences file; keep the bytes for a human.
			movedAside = path + ".corrupt"
			if err := os.Rename(path, movedAside); err != nil {
				return "", fmt.Errorf("prepare profile: move corrupt Preferences aside: %w", err)
			}
			prefs = map[string]json.RawMessage{}
		}
	case os.IsNotExist(err):
	default:
		return "", fmt.Errorf("prepare profile: %w", err)
	}
	if err := setNested(prefs, "session", "restore_on_startup", restoreLastSession); err != nil {
		return movedAside, err
	}
	if err := setNested(prefs, "profile", "exit_type", "Normal"); err != nil {
		return movedAside, err
	}
	if err := setNested(prefs, "profile", "exited_cleanly", true); err != nil {
		return movedAside, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep the user's URLs byte-for-byte readable
	if err := enc.Encode(prefs); err != nil {
		return movedAside, fmt.Errorf("prepare profile: %w", err)
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o600); err != nil {
		return movedAside, fmt.Errorf("prepare profile: %w", err)
	}
	return movedAside, nil
}

// setNested sets prefs[section][key] = value, keeping the section's other keys. A section that is not a JSON
// object is replaced.
func setNested(prefs map[string]json.RawMessage, section, key string, value any) error {
	sec := map[string]json.RawMessage{}
	if raw, ok := prefs[section]; ok {
		if err := json.Unmarshal(raw, &sec); err != nil || sec == nil {
			sec = map[string]json.RawMessage{}
		}
	}
	v, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("prepare profile: %w", err)
	}
	sec[key] = v
	raw, err := marshalNoEscape(sec)
	if err != nil {
		return fmt.Errorf("prepare profile: %w", err)
	}
	prefs[section] = raw
	return nil
}

func marshalNoEscape(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}
