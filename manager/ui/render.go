package ui

import (
	"bytes"
	"net/http"
)

// render writes a page of the shared layout. It renders into a buffer first, so a template error
// becomes a clean 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout.html", data); err != nil {
		s.cfg.Log.Error().Err(err).Str("page", name).Msg("render a page")
		s.plain(w, http.StatusInternalServerError, "the page could not be rendered; the manager's log says why")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// message is a page that says one thing and what to do about it; link, when set, is where to go next.
type message struct {
	Title, Text, Action, Link string
}

func (s *Server) message(w http.ResponseWriter, r *http.Request, status int, title, text, action, link string) {
	if !wantsHTML(r) {
		s.plain(w, status, title+": "+text+" "+action)
		return
	}
	s.render(w, status, "message", message{Title: title, Text: text, Action: action, Link: link})
}
