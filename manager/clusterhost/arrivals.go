package clusterhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/cluster"
	"vibebrowser/mux/clientid"
	"vibebrowser/mux/downloads"
	"vibebrowser/mux/sys/osuser"
	"vibebrowser/state"
)

// A download arrives (SPEC §19 "Routing": a task's downloads appear in its VIBE_DOWNLOAD_DIR on the agent's
// host as each completes). The store's host filed it for a client of this host and sends it: its record in
// the header, its file in the body. Nothing in it is taken on trust but the sender's name, which its
// certificate gives: the sender must run the store, the folder must be the client's as a local download's is,
// the name is made safe by the rules of a local download's, the size is bounded by VIBE_DOWNLOAD_MAX_MB and
// must be the body's, and the body must hash to the sha256 said. The file is placed as a local download is
// (never over another file, the store's agent user's, 0600) and recorded as one.

// downloadHead is a download's header on the door: the record the store's host filed.
type downloadHead struct {
	OwnerDir string    `json:"owner_dir"`
	Client   string    `json:"client"`
	GUID     string    `json:"guid"`
	URL      string    `json:"url"`
	Name     string    `json:"name"`
	Size     int64     `json:"size"`
	SHA256   string    `json:"sha256"`
	At       time.Time `json:"at"`
	// Own is the client's request for its own copy, in a folder of this host (owncopies.go); nil for none.
	Own *ownCopyHead `json:"own,omitempty"`
}

// deliveringDir is where a download's body is written under downloads/<slug>/ before it is placed: the
// manager's own folder (0700), so that nothing the store's agent user does in the client's folder reaches
// the file while it is written. The boot sweep removes what a crash left there (downloads.PartialSuffix).
const deliveringDir = ".delivering"

// guidMax bounds a download's GUID (Chrome's are 36 bytes).
const guidMax = 128

// takeDownload is the exchange of a download sent by the store's host: the file is placed in the client's
// folder and recorded, or refused with the rule it broke and nothing kept.
func (a *arrivals) takeDownload(ctx context.Context, peer, store string, head json.RawMessage, body *cluster.Body) ([]byte, error) {
	var h downloadHead
	if err := decodeHead(head, &h); err != nil {
		return nil, err
	}
	if err := a.fromOwner(ctx, peer, store); err != nil {
		return nil, err
	}
	sp, err := a.spec(ctx, store)
	if err != nil {
		return nil, err
	}
	if err := a.checkDownload(ctx, store, h, body.Size); err != nil {
		return nil, err
	}
	if d, ok := a.already(ctx, store, h); ok {
		// Its body is not asked for, nor its own copy made again: the client is told the file placed before.
		return json.Marshal(deliveredAnswer{Name: d.Name, Path: d.Path})
	}
	staged, err := a.stage(ctx, sp.Slug, body, h.SHA256)
	if err != nil {
		return nil, err
	}
	defer os.Remove(staged.Name())
	defer staged.Close()
	bc := a.cfg.Browsers()
	agent, err := bc.Agent(sp)
	if err != nil {
		return nil, err
	}
	// The file is the store's agent user's before it has a name in the agent's folder (SPEC §14).
	if agent != nil {
		if err := staged.Chown(agent.UID, agent.GID); err != nil {
			return nil, fmt.Errorf("give the download to the agent user %s: %w", agent.Name, err)
		}
	}
	written, err := staged.Stat()
	if err != nil {
		return nil, err
	}
	dir := a.keep.DownloadDir(sp, h.Client)
	final, err := downloads.Filer{Agent: agent}.PlaceUnique(staged.Name(), dir, downloads.SanitizeName(h.Name))
	if err != nil {
		return nil, err
	}
	if err := placed(final, written, agent); err != nil {
		return nil, err
	}
	a.keep.Downloaded(sp, downloads.Download{GUID: h.GUID, ClientID: h.Client, OwnerDir: h.OwnerDir, URL: h.URL,
		Name: filepath.Base(final), Path: final, Size: h.Size, SHA256: h.SHA256, At: h.At})
	a.log.Info().Str("store", store).Str("from", peer).Str("client", h.Client).Str("file", final).Int64("size", h.Size).
		Msg("a download of this host's client arrived from the store's host")
	clientPath := final
	if h.Own != nil {
		p, err := ownCopy(final, agent, *h.Own, filepath.Base(final), h.GUID)
		if err != nil {
			// As a local mux does: the client keeps the file in its owner folder.
			a.log.Error().Err(err).Str("store", store).Str("client", h.Client).Str("dir", h.Own.Dir).
				Msg("downloads: the client's own copy could not be made; it keeps the one in its owner folder")
		} else {
			clientPath = p
		}
	}
	return json.Marshal(deliveredAnswer{Name: filepath.Base(final), Path: clientPath})
}

// checkDownload checks a download's header against the rules of a local download's before any of its bytes
// cross: a refusal names the rule and the form allowed.
func (a *arrivals) checkDownload(ctx context.Context, store string, h downloadHead, size int64) error {
	maxBytes := int64(a.cfg.DownloadMaxMB) << 20
	switch {
	case !clientid.Valid(h.Client):
		return fmt.Errorf("client id %q: a client id matches %s", h.Client, clientid.Form)
	case h.OwnerDir != clientid.OwnerDir(h.Client):
		return fmt.Errorf("owner folder %q is not client %s's: a client's downloads go to %q (its task's folder for a "+
			"--worker slot, else its own id)", h.OwnerDir, h.Client, clientid.OwnerDir(h.Client))
	case api.ValidTaskID(h.OwnerDir) && !a.taskHere(ctx, h.OwnerDir, store):
		return fmt.Errorf("task %s is no task of host %s on store %s: a download goes to the host of its task", h.OwnerDir, a.host, store)
	case h.Size != size:
		return fmt.Errorf("the header says %d bytes and the body has %d: a download's size is its body's", h.Size, size)
	case h.Size < 0 || h.Size > maxBytes:
		return fmt.Errorf("a download of %d bytes: a task's downloads take at most %d MiB (VIBE_DOWNLOAD_MAX_MB=%d)",
			h.Size, a.cfg.DownloadMaxMB, a.cfg.DownloadMaxMB)
	case !isSHA256(h.SHA256):
		return fmt.Errorf("sha256 %q: a download's sha256 is 64 lowercase hex digits", h.SHA256)
	case h.GUID == "" || len(h.GUID) > guidMax:
		return fmt.Errorf("a GUID of %d bytes: a download's GUID is 1 to %d bytes", len(h.GUID), guidMax)
	case h.At.IsZero():
		return errors.New("a download with no time: a download's header says when it completed")
	}
	return nil
}

// already is the record of the download h when this host took it before: a delivery whose answer was lost
// is tried again, and must not land twice.
func (a *arrivals) already(ctx context.Context, store string, h downloadHead) (state.Download, bool) {
	task := ""
	if api.ValidTaskID(h.OwnerDir) {
		task = h.OwnerDir
	}
	ds, err := a.db.ListDownloads(ctx, state.DownloadFilter{Key: store, TaskID: task})
	if err != nil {
		return state.Download{}, false
	}
	for _, d := range ds {
		if d.GUID == h.GUID && d.OwnerDir == h.OwnerDir && d.SHA256 == h.SHA256 {
			return d, true
		}
	}
	return state.Download{}, false
}

// stage writes body into a new partial file of the manager's own under downloads/<slug>/.delivering/ and
// checks that it hashes to sum; the file is returned open. Nothing is kept of a body that fails.
func (a *arrivals) stage(ctx context.Context, slug string, body io.Reader, sum string) (*os.File, error) {
	dir := a.cfg.Path("downloads", slug, deliveringDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, ".delivery-*"+downloads.PartialSuffix)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), stoppable(ctx, body))
	if err == nil && hex.EncodeToString(h.Sum(nil)) != sum {
		err = fmt.Errorf("the bytes received hash to sha256 %s, not to the %s the header says: a download is kept "+
			"only as its host filed it", hex.EncodeToString(h.Sum(nil)), sum)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// placed checks that final, just placed, is the staged file (or the one copy of it, where it could not be
// linked) and makes it the agent user's, 0600, as a local download's file is: between its placing and this,
// the agent user may have put something else under its name in its own folder, which is then refused.
func placed(final string, written os.FileInfo, agent *osuser.User) error {
	f, err := os.OpenFile(final, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !os.SameFile(fi, written) && (!ok || st.Nlink != 1 || !fi.Mode().IsRegular()) {
		return fmt.Errorf("%s changed while it was placed: it is neither the file received nor a copy of it", final)
	}
	var errs []error
	if agent != nil {
		errs = append(errs, f.Chown(agent.UID, agent.GID))
	}
	return errors.Join(append(errs, f.Chmod(0o600))...)
}

// isSHA256 reports whether s is a sha256 in lowercase hex.
func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// stoppable wraps r so that a long copy ends with ctx.
func stoppable(ctx context.Context, r io.Reader) io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return r.Read(p)
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
