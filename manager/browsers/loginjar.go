package browsers

import (
	"errors"
	"io/fs"

	"vibebrowser/manager/logins"
	"vibebrowser/mux/sys/osuser"
)

// The cookie checkpoint as snapshots see it (SPEC §18): its content is opaque here; a snapshot carries it,
// and a restore puts it back (manager/logins reads and writes the file).

// readJar is the opened content of slug's checkpoint; nil, nil when there is none.
func (sn *Snapshots) readJar(slug string) ([]byte, error) {
	key, err := sn.key()
	if err != nil {
		return nil, err
	}
	jar, _, err := logins.ReadJar(key, sn.f.cfg.Home, slug)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return jar, err
}

// writeJar replaces slug's checkpoint with content, given to own (nil: the manager's); nil content removes
// the checkpoint.
func (sn *Snapshots) writeJar(slug string, content []byte, own *fileOwner) error {
	if content == nil {
		return logins.RemoveJar(sn.f.cfg.Home, slug)
	}
	key, err := sn.key()
	if err != nil {
		return err
	}
	var owner *osuser.User
	if own != nil {
		owner = &osuser.User{UID: own.uid, GID: own.gid}
	}
	return logins.WriteJar(key, sn.f.cfg.Home, slug, content, owner)
}
