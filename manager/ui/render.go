package ui

import (
	"bytes"
	"net/http"
)

// layoutData is what the shared layout draws: the page's own data (Page, which the page's templates
// get), where the viewer's session lives (Base, the document's base URL: every link of a page is
// relative to it; "" for a page outside a session) and what session.js does with it (Session).
type layoutData struct {
	Base    string
	Session string // "live": keep Base; "resume": a page that asks for a login, which a kept session may open instead; "none"
	Page    any
}

// render writes a page of the shared layout. It renders into a buffer first, so a template error
// becomes a clean 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	s.renderIn(w, status, name, sessionBase(r), "", data)
}

// renderIn is render with the layout's Base and Session said; an empty session is "live" with a base,
// "none" without.
func (s *Server) renderIn(w http.ResponseWriter, status int, name, base, session string, data any) {
	if session == "" {
		session = "none"
		if base != "" {
			session = "live"
		}
	}
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout.html", layoutData{Base: base, Session: session, Page: data}); err != nil {
		s.cfg.Log.Error().Err(err).Str("page", name).Msg("render a page")
		s.plain(w, http.StatusInternalServerError, "the page could not be rendered; the manager's log says why")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// message is a page that says one thing and what to do about it; link, when set, is where to go next
// (a path relative to the session's base: "" for none, "./" for the overview).
type message struct {
	Title, Text, Action, Link string
}

func (s *Server) message(w http.ResponseWriter, r *http.Request, status int, title, text, action, link string) {
	if !wantsHTML(r) {
		s.plain(w, status, title+": "+text+" "+action)
		return
	}
	s.render(w, r, status, "message", message{Title: title, Text: text, Action: action, Link: link})
}
