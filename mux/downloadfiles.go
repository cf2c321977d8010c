package mux

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"vibebrowser/mux/clientid"
	"vibebrowser/mux/downloads"
)

// Filing finished downloads (SPEC §12): the file Chrome wrote under .incoming is moved to its owner's
// folder under a sanitised, unique name, and copied or linked where the client asked for it, before the
// client hears "completed".

// finish files a completed download: into its owner's folder under a unique, sanitised name, into
// the owner's own downloadPath when it asked for one (for a client of another host: through Hooks.Deliver, on
// that host), and only then tells the owner it completed. It runs
// outside the lock: a copy across file systems may take a while.
func (ds *downloadTracker) finish(d *download, ev dlEvent) {
	m := ds.m
	dl := downloads.Download{GUID: d.guid, URL: d.url, OwnerDir: downloads.UnattributedDir, At: time.Now()}
	if d.owner != nil {
		dl.ClientID, dl.OwnerDir, dl.Host = d.owner.id, clientid.OwnerDir(d.owner.id), d.host
	}
	src := filepath.Join(ds.incomingDir(), d.guid)
	err := ds.file(&dl, src, d)
	if err != nil {
		m.log.Error().Err(err).Str("guid", d.guid).Str("client", dl.ClientID).Msg("downloads: a completed download could not be filed")
	}
	clientPath := dl.Path
	var own *downloads.OwnCopy
	if d.behavior.path != "" && (d.behavior.behavior == behaviorAllow || d.behavior.behavior == behaviorAllowAndName) {
		own = &downloads.OwnCopy{Dir: d.behavior.path, Exact: d.behavior.behavior == behaviorAllowAndName}
	}
	switch {
	case err != nil:
	case dl.Host != "":
		// A client of another host asked for a folder on its own host, not on this one: the file goes there,
		// and its own copy is made there, before it hears "completed" (SPEC §19).
		if h := m.cfg.Hooks.Deliver; h != nil {
			if p, ok := h(dl, own); ok {
				clientPath = p
			}
		}
	case own != nil:
		p, perr := ds.filer().PlaceOwn(dl.Path, *own, dl.Name, d.guid)
		if perr != nil {
			m.log.Error().Err(perr).Str("guid", d.guid).Str("client", dl.ClientID).Str("dir", own.Dir).
				Msg("downloads: the client's own copy could not be made; it keeps the one in its owner folder")
			break
		}
		clientPath = p
	}
	m.mu.Lock()
	ds.eventLocked(d, completedEvent(ev, clientPath))
	m.mu.Unlock()
	if err == nil {
		m.log.Info().Str("guid", d.guid).Str("client", dl.ClientID).Str("file", dl.Path).Int64("size", dl.Size).Msg("download filed")
		if h := m.cfg.Hooks.Downloaded; h != nil {
			h(dl)
		}
	}
}

// file moves src into dl.OwnerDir under a unique sanitised name and fills dl's file fields. With
// an agent user (SPEC §14) the owner folder (0700) and the file (0600) become that user's; the file filed is
// checked to be the one Chrome wrote (no symlink, the same inode), as the browser user writes the incoming
// folder and the agent user the owner folder, and the mux, which may run as root, must not be led to
// another file by either.
func (ds *downloadTracker) file(dl *downloads.Download, src string, d *download) error {
	m := ds.m
	dir := filepath.Join(m.cfg.DownloadDir, dl.OwnerDir)
	if err := ds.ownerFolder(dir); err != nil {
		return fmt.Errorf("owner folder: %w", err)
	}
	written, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !written.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	final, err := ds.filer().PlaceUnique(src, dir, downloads.SanitizeName(d.name))
	if err != nil {
		return err
	}
	if err := os.Remove(src); err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.log.Warn().Err(err).Str("file", src).Msg("downloads: cannot remove the incoming copy")
	}
	f, err := os.OpenFile(final, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, written) && !singleName(fi) {
		return fmt.Errorf("%s changed while it was filed: it is neither the file Chrome wrote nor a copy of it", final)
	}
	if a := m.cfg.Agent; a != nil {
		if err := errors.Join(f.Chown(a.UID, a.GID), f.Chmod(0o600)); err != nil {
			return fmt.Errorf("give %s to the agent user %s: %w", final, a.Name, err)
		}
	}
	h := sha256.New()
	n, err := io.Copy(h, m.stoppable(f))
	if err != nil {
		return fmt.Errorf("hash %s: %w", final, err)
	}
	dl.Path, dl.Name, dl.Size, dl.SHA256 = final, filepath.Base(final), n, hex.EncodeToString(h.Sum(nil))
	return nil
}

// errMuxClosed stops a copy or hash when the mux shuts down.
var errMuxClosed = errors.New("mux shutting down")

// stoppable wraps r so that a long copy ends when the mux closes (Serve waits for the goroutine).
func (m *Mux) stoppable(r io.Reader) io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		m.mu.Lock()
		closed := m.closed
		m.mu.Unlock()
		if closed {
			return 0, errMuxClosed
		}
		return r.Read(p[:min(len(p), 1<<20)])
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// completedEvent is the owner's "completed": Chrome's event with filePath set to where the owner finds
// the file (never the mux's incoming folder).
func completedEvent(ev dlEvent, path string) []byte {
	b := append([]byte(`{"method":"Browser.downloadProgress","params":{"guid":`), appendJSONString(nil, ev.Params.GUID)...)
	b = append(b, `,"totalBytes":`...)
	b = strconv.AppendFloat(b, ev.Params.TotalBytes, 'f', -1, 64)
	b = append(b, `,"receivedBytes":`...)
	b = strconv.AppendFloat(b, ev.Params.ReceivedBytes, 'f', -1, 64)
	b = append(b, `,"state":"completed","filePath":`...)
	b = appendJSONString(b, path)
	return append(b, "}}"...)
}

// canceledEvent is a downloadProgress "canceled" of guid, for a download the mux ended itself.
func canceledEvent(guid string) []byte {
	b := append([]byte(`{"method":"Browser.downloadProgress","params":{"guid":`), appendJSONString(nil, guid)...)
	return append(b, `,"totalBytes":0,"receivedBytes":0,"state":"canceled"}}`...)
}

// filer places the downloads' files, for the store's agent user where it has one, stopping when the mux closes.
func (ds *downloadTracker) filer() downloads.Filer {
	return downloads.Filer{Agent: ds.m.cfg.Agent, Guard: ds.m.stoppable}
}
