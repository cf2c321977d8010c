package clusterhost

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/mux/downloads"
)

// A download of a client of another host is delivered there (SPEC §19 "Routing"): the mux filed it here, in
// the owner folder of this host, and recorded it as any download (this host's quota counts it); its file
// crosses to the client's host, which places and records it for its task and makes the client's own copy
// where it asked (arrivals.go), before the client hears "completed" (mux.Hooks.Deliver): playwright, puppeteer
// and browser-harness read the file at the path "completed" names, on their own host. A delivery that fails
// is tried again while that host is alive, for at most deliverReach; one given up is logged and said in an
// event naming the file here, where it stays, and the client is told that file. Each download is delivered
// once: here, in its mux's filing, never again in the background.

// Delivery pacing: tries 1, 2, 4, 8 and 16 s apart while the client's host is alive, none begun past
// deliverReach: enough for a host whose manager restarts, and the client's "completed" waits no longer (a try
// under way is bounded by the door's own bounds: a big file crosses as long as it moves).
const (
	deliverTries     = 6
	deliverFirstWait = time.Second
	deliverReach     = 30 * time.Second
	// deliverAnswerMax bounds the receiving host's answer (the name it placed the file under, the client's path).
	deliverAnswerMax = 4 << 10
	// urlInHeadMax bounds the URL a download's header carries: a data: URL may be megabytes, and the
	// header is one line of at most 64 KiB. The record here keeps it whole.
	urlInHeadMax = 16 << 10
)

// deliveredAnswer is the receiving host's answer to a download.
type deliveredAnswer struct {
	Name string `json:"name"` // the file's name in the client's owner folder there
	Path string `json:"path"` // where the client finds it there: its own copy, else the owner folder's file
}

// Deliver sends d, a download the mux filed here for a client of another host (d.Host), to that host with the
// client's own-copy request (nil for none), and returns where the client finds the file there; false when it
// was not delivered (logged, and said in an event). It is the muxes' Hooks.Deliver: it returns within
// deliverReach and one try.
func (ch *Host) Deliver(sp browsers.Spec, d downloads.Download, own *downloads.OwnCopy) (string, bool) {
	if d.Host == "" || d.Host == ch.host {
		return "", false
	}
	return ch.deliver(ch.runCtx, sp, d, own)
}

// deliver tries to deliver d until it is delivered, given up, or ctx ends.
func (ch *Host) deliver(ctx context.Context, sp browsers.Spec, d downloads.Download, own *downloads.OwnCopy) (string, bool) {
	log := ch.log.With().Str("store", sp.Key).Str("client", d.ClientID).Str("to", d.Host).Str("file", d.Path).Logger()
	reach, cancel := context.WithTimeout(ctx, deliverReach)
	defer cancel()
	var ans deliveredAnswer
	err := tryBackoff(reach, deliverTries, deliverFirstWait, func() bool { return ch.hosts.Alive(d.Host) }, func() error {
		var err error
		ans, err = ch.deliverOnce(ctx, sp, d, own)
		if err != nil {
			log.Debug().Err(err).Msg("a download not delivered yet")
		}
		return err
	})
	switch {
	case err == nil:
		log.Info().Int64("size", d.Size).Str("client_path", ans.Path).Msg("a download delivered to its client's host")
		return ans.Path, true
	case ctx.Err() != nil:
		log.Warn().Err(err).Msg("a download not delivered: this manager stopped")
		return "", false
	}
	task := ""
	if api.ValidTaskID(d.OwnerDir) {
		task = d.OwnerDir
	}
	msg := fmt.Sprintf("download %q of client %s was not delivered to host %s, where its client runs: %v; the file "+
		"stays on this host (%s) at %s", d.Name, d.ClientID, d.Host, err, ch.host, d.Path)
	log.Warn().Err(err).Msg("a download given up: " + msg)
	if ch.note != nil {
		ch.note(zerolog.WarnLevel, api.EventDownloadUndelivered, sp.Key, api.Event{TaskID: task, Message: msg})
	}
	return "", false
}

// deliverOnce sends d's file, with the client's own-copy request, to its client's host once.
func (ch *Host) deliverOnce(ctx context.Context, sp browsers.Spec, d downloads.Download, own *downloads.OwnCopy) (deliveredAnswer, error) {
	f, err := os.OpenFile(d.Path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return deliveredAnswer{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return deliveredAnswer{}, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != d.Size {
		// Its receiver would refuse it (its sha256): say here what went wrong.
		return deliveredAnswer{}, fmt.Errorf("%s is no longer the file filed (%d bytes then, %d now)", d.Path, d.Size, fi.Size())
	}
	head := downloadHead{OwnerDir: d.OwnerDir, Client: d.ClientID, GUID: d.GUID, URL: cut(d.URL, urlInHeadMax), Name: d.Name,
		Size: d.Size, SHA256: d.SHA256, At: d.At}
	if own != nil {
		head.Own = &ownCopyHead{Dir: own.Dir, Exact: own.Exact}
	}
	b, err := ch.exchange(ctx, d.Host, sp.Key, kindDownload, head, f, d.Size, deliverAnswerMax)
	if err != nil {
		return deliveredAnswer{}, err
	}
	var ans deliveredAnswer
	if err := json.Unmarshal(b, &ans); err != nil || !filepath.IsAbs(ans.Path) {
		return deliveredAnswer{}, fmt.Errorf("host %s answered a download with %q: the answer names the file's absolute path there", d.Host, b)
	}
	return ans, nil
}

// cut is s cut to at most n bytes at a rune boundary, with "…" when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
