package chrome

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// restoreLastSession is Chromium's session.restore_on_startup value for "continue where you left off".
const restoreLastSession = 1

// maxPrefs bounds the Preferences file the manager reads: Chromium's is well under a megabyte, and a larger
// one is treated as unreadable (moved aside) rather than loaded into the manager.
const maxPrefs = 32 << 20

// prepareProfile makes the profile restore its previous session: it sets session.restore_on_startup = 1 in
// <profile>/Default/Preferences, keeping every other preference, and marks the last exit clean so a killed
// browser does not come back behind a "didn't shut down correctly" bubble. The file is written atomically,
// from inside the profile (profilefiles.go), and with Default given to own when own is not nil. It returns
// the path of a corrupt Preferences file it moved aside, or "".
func prepareProfile(profileDir string, own *owner) (movedAside string, err error) {
	root, err := os.OpenRoot(profileDir)
	if err != nil {
		return "", fmt.Errorf("prepare profile: %w", err)
	}
	defer root.Close()
	if err := root.MkdirAll("Default", 0o700); err != nil {
		return "", fmt.Errorf("prepare profile: %w", err)
	}
	if own != nil {
		if err := root.Lchown("Default", own.uid, own.gid); err != nil {
			return "", fmt.Errorf("prepare profile: %w", err)
		}
	}
	name := filepath.Join("Default", "Preferences")
	prefs := map[string]json.RawMessage{}
	corrupt := false
	fi, err := root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("prepare profile: %w", err)
	case !fi.Mode().IsRegular():
		corrupt = true // a symlink or a FIFO is no file of Chromium's
	default:
		data, err := readIn(root, name, maxPrefs)
		if err != nil && !errors.Is(err, errTooLarge) {
			return "", fmt.Errorf("prepare profile: %w", err)
		}
		corrupt = err != nil || json.Unmarshal(data, &prefs) != nil || prefs == nil
	}
	if corrupt {
		// Chromium itself resets an unreadable Preferences file; keep the bytes for a human.
		if err := root.Rename(name, name+".corrupt"); err != nil {
			return "", fmt.Errorf("prepare profile: move corrupt Preferences aside: %w", err)
		}
		movedAside = filepath.Join(profileDir, name+".corrupt")
		prefs = map[string]json.RawMessage{}
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
	if err := writeIn(root, name, buf.Bytes(), own); err != nil {
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
