package clusterhost

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/mux/downloads"
)

// A download of a client of another host is delivered there (SPEC §19 "Routing"): the mux filed it here, in
// the owner folder of this host, and recorded it as any download (this host's quota counts it); then its file
// crosses to the client's host, which places and records it for its task (arrivals.go). A delivery that fails
// is tried again a few times while that host is alive; one given up is logged and said in an event naming the
// file here, where it stays.

// Delivery pacing: about half a minute of tries in all (1 + 2 + 4 + 8 + 16 s between six), enough for a host
// whose manager restarts, not so long that a dead host's downloads pile up.
const (
	deliverTries     = 6
	deliverFirstWait = time.Second
	// deliverAnswerMax bounds the receiving host's answer (the name it placed the file under).
	deliverAnswerMax = 4 << 10
	// urlInHeadMax bounds the URL a download's header carries: a data: URL may be megabytes, and the
	// header is one line of at most 64 KiB. The record here keeps it whole.
	urlInHeadMax = 16 << 10
)

// Deliver sends d, a download the mux filed here for a client of another host (d.Host), to that host, in the
// background.
func (ch *Host) Deliver(sp browsers.Spec, d downloads.Download) {
	if d.Host == "" || d.Host == ch.host {
		return
	}
	ch.spawn(func(ctx context.Context) { ch.deliver(ctx, sp, d) })
}

// deliver tries to deliver d until it is delivered, given up, or ctx ends.
func (ch *Host) deliver(ctx context.Context, sp browsers.Spec, d downloads.Download) {
	log := ch.log.With().Str("store", sp.Key).Str("client", d.ClientID).Str("to", d.Host).Str("file", d.Path).Logger()
	err := tryBackoff(ctx, deliverTries, deliverFirstWait, func() bool { return ch.hosts.Alive(d.Host) }, func() error {
		err := ch.deliverOnce(ctx, sp, d)
		if err != nil {
			log.Debug().Err(err).Msg("a download not delivered yet")
		}
		return err
	})
	switch {
	case err == nil:
		log.Info().Int64("size", d.Size).Msg("a download delivered to its client's host")
		return
	case ctx.Err() != nil:
		log.Warn().Err(err).Msg("a download not delivered: this manager stopped")
		return
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
}

// deliverOnce sends d's file to its client's host once.
func (ch *Host) deliverOnce(ctx context.Context, sp browsers.Spec, d downloads.Download) error {
	f, err := os.OpenFile(d.Path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() != d.Size {
		// Its receiver would refuse it (its sha256): say here what went wrong.
		return fmt.Errorf("%s is no longer the file filed (%d bytes then, %d now)", d.Path, d.Size, fi.Size())
	}
	head := downloadHead{OwnerDir: d.OwnerDir, Client: d.ClientID, GUID: d.GUID, URL: cut(d.URL, urlInHeadMax), Name: d.Name,
		Size: d.Size, SHA256: d.SHA256, At: d.At}
	_, err = ch.exchange(ctx, d.Host, sp.Key, kindDownload, head, f, d.Size, deliverAnswerMax)
	return err
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
