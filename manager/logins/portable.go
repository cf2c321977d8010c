package logins

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"vibebrowser/mux/sys/osuser"
)

// Portable profiles (SPEC §18): Chromium encrypts cookie values with a key from the OS keyring where one
// answers, which ties a profile to one user on one machine. A chrome store launches with Chromium's own
// password store instead (PortableFlags), so its profile and its snapshots restore anywhere. A profile made
// before that (no marker) launches once as it was: its cookies, readable then, are checkpointed through
// CDP, the marker is written, and the next launch, portable, sets them back from the checkpoint.

// PortableMarker is the file in a profile that says it launches portable. A snapshot of the profile carries it.
const PortableMarker = "vibe-portable"

// PrepareProfile says whether the profile in dir launches portable: it has the marker, or Chromium never ran
// on it (no Local State yet), in which case the marker is written now (owner's, as the profile is).
// false is an older profile, to be carried over once by its checkpoint (MarkPortable after it).
func PrepareProfile(dir string, owner *osuser.User) (bool, error) {
	if IsPortable(dir) {
		return true, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "Local State")); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("profile %s: %w", dir, err)
	}
	return true, MarkPortable(dir, owner)
}

// IsPortable reports whether the profile in dir has its marker: it launches portable.
func IsPortable(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, PortableMarker))
	return err == nil
}

// MarkPortable writes dir's PortableMarker (0600, owner's when owner is set).
func MarkPortable(dir string, owner *osuser.User) error {
	path := filepath.Join(dir, PortableMarker)
	err := os.WriteFile(path, []byte("cookies under Chromium's basic password store; see SPEC §18\n"), 0o600)
	if err == nil && owner != nil {
		err = owner.Chown(path)
	}
	if err != nil {
		return fmt.Errorf("mark the profile portable: %w", err)
	}
	return nil
}
