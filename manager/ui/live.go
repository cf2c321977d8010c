package ui

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// A live page is drawn once, by its templates. Its GET renders the whole page; its stream (SSE, one per
// open page) sends the parts of it that changed since, rendered by the same templates, and live.js only
// puts them in place. A part is a template whose root element has the template's name as its id.

// liveFeed is what a page's stream draws.
type liveFeed struct {
	page  string   // the page's template set (parsePages)
	parts []string // its live parts, in page order
	// read, when set, reads what the page shows of the manager's state (a database read): at the start,
	// when Source.Changed says the state changed, and every heartbeat for what changes without a write.
	read func(ctx context.Context)
	// data is the page's data now: read's last answer with what only memory holds (a tab's title, ages),
	// looked at every pollEvery.
	data func() any
}

// stream serves feed's parts over SSE: all of them at once, then each again whenever it renders
// differently, and a comment every heartbeat while none does.
//
// It looks at feed.data every pollEvery; feed.read runs when the state changed, at once, and once more
// pollEvery later (the manager records a browser running just before its in-memory slot holds it), with
// the changes in between read together: never more often than every pollEvery, however busy the agents.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, feed liveFeed) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.plain(w, http.StatusInternalServerError, "streaming is not supported by this connection")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	ctx := r.Context()
	read := func() {
		if feed.read != nil {
			feed.read(ctx)
		}
	}
	changed := s.cfg.Source.Changed() // before the first read: a change during it is not missed
	read()
	look := time.NewTicker(s.pollEvery)
	defer look.Stop()
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	var due <-chan time.Time // the read after a change's
	again := false           // the state changed since the last read began
	last := map[string][]byte{}
	lastSent := time.Now()
	for {
		msg, err := s.changedParts(feed, last)
		if err != nil {
			s.cfg.Log.Error().Err(err).Str("page", feed.page).Msg("render a live part")
			return // the page's stream breaks and reconnects; the manager's log says why
		}
		if msg != "" {
			if _, err := io.WriteString(w, msg); err != nil {
				return // the viewer left
			}
			flusher.Flush()
			lastSent = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-look.C:
		case <-beat.C:
			if time.Since(lastSent) >= s.heartbeat {
				if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil {
					return
				}
				flusher.Flush()
				lastSent = time.Now()
			}
			read()
		case <-changed:
			changed = s.cfg.Source.Changed()
			if due != nil {
				again = true
				continue
			}
			read()
			due = time.After(s.pollEvery)
		case <-due:
			read()
			due = nil
			if again {
				again, due = false, time.After(s.pollEvery)
			}
		}
	}
}

// changedParts renders feed's parts and returns an SSE message of those that differ from last ("" when
// none does), updating last.
func (s *Server) changedParts(feed liveFeed, last map[string][]byte) (string, error) {
	data := feed.data()
	var html bytes.Buffer
	for _, name := range feed.parts {
		var b bytes.Buffer
		if err := s.pages[feed.page].ExecuteTemplate(&b, name, data); err != nil {
			return "", err
		}
		if bytes.Equal(b.Bytes(), last[name]) {
			continue
		}
		last[name] = b.Bytes()
		html.Write(b.Bytes())
		html.WriteByte('\n')
	}
	if html.Len() == 0 {
		return "", nil
	}
	// SSE ends a line at CR too: a CR of the agents' text (an event's message, a handoff's reason) is
	// sent as its character reference, which the page reads back as the same CR.
	body := bytes.ReplaceAll(bytes.TrimSuffix(html.Bytes(), []byte("\n")), []byte("\r"), []byte("&#13;"))
	var msg bytes.Buffer
	msg.WriteString("event: parts\n")
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		msg.WriteString("data: ")
		msg.Write(line)
		msg.WriteByte('\n')
	}
	msg.WriteByte('\n')
	return msg.String(), nil
}
