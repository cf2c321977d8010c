package ui

import (
	"net/http"
	"time"
)

// A page's banner after a person's action (an answer sent, a browser that did not start) is asked for by
// the redirect's query, ?answered=CODE on the overview and ?error=CODE on a store page, and the code only
// chooses: the words are the ones the server wrote for this session's own action, kept with the session
// for noticeTTL. Text never comes from the URL, so a link someone else wrote (an agent's
// "/?answered=Paste+your+password") makes the UI say nothing.

// The codes, a closed list: a code not in it shows nothing.
const (
	noticeDone     = "done"      // ?answered=: the person's answer reached the agent
	noticeCantHelp = "cant_help" // ?answered=: the agent knows the person cannot help
	noticeStart    = "start"     // ?error=: the browser did not start
	noticeAddress  = "address"   // ?error=: the new tab's address is not allowed
	noticeOpenTab  = "open-tab"  // ?error=: the human tab did not open
	noticeCloseTab = "close-tab" // ?error=: the human tab was not closed
)

// The query parameters that carry a code.
const (
	answeredParam = "answered" // the overview's
	errorParam    = "error"    // a store page's
)

// noticeCodes gives each code the parameter that carries it.
var noticeCodes = map[string]string{noticeDone: answeredParam, noticeCantHelp: answeredParam,
	noticeStart: errorParam, noticeAddress: errorParam, noticeOpenTab: errorParam, noticeCloseTab: errorParam}

// noticeURL is the query that asks for code's banner: "?error=start".
func noticeURL(code string) string { return "?" + noticeCodes[code] + "=" + code }

// noticeTTL is how long after the action its banner shows: the redirect's page, its live stream and a
// reload soon after.
const noticeTTL = time.Minute

// notice is one banner's words, and when its action was.
type notice struct {
	text string
	at   time.Time
}

// remember keeps text as the banner that code asks for on r's session.
func (s *Server) remember(r *http.Request, code, text string) {
	if noticeCodes[code] == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ses *session
	if rel, ok := relayOf(r); ok {
		ses = s.visitors.ofLocked(rel.who(), s.cfg.Now(), true)
	} else if c, err := r.Cookie(sessionCookie); err == nil {
		ses = s.sessions[c.Value]
	}
	if ses == nil {
		return
	}
	if ses.notices == nil {
		ses.notices = map[string]notice{}
	}
	ses.notices[code] = notice{text: text, at: s.cfg.Now()}
}

// noticeFor is the banner that r's query parameter param asks for on r's session: "" for a code unknown
// or not param's, and for one this session's own action did not set within noticeTTL.
func (s *Server) noticeFor(r *http.Request, param string) string {
	code := r.URL.Query().Get(param)
	if noticeCodes[code] != param {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ses *session
	if rel, ok := relayOf(r); ok {
		ses = s.visitors.ofLocked(rel.who(), s.cfg.Now(), false)
	} else if c, err := r.Cookie(sessionCookie); err == nil {
		ses = s.sessions[c.Value]
	}
	if ses == nil {
		return ""
	}
	n, ok := ses.notices[code]
	if !ok || s.cfg.Now().Sub(n.at) >= noticeTTL {
		return ""
	}
	return n.text
}

// visitors keep the notices of the people other hosts relay (fromhost.go), by relayed.who: they have no
// session here, and their notices last noticeTTL.
type visitors map[string]*session

// ofLocked is who's, made when create is set (its action's notice): nil when there is none. The caller holds
// the Server's mu.
func (v visitors) ofLocked(who string, now time.Time, create bool) *session {
	ses := v[who]
	if ses == nil && create {
		for w, old := range v {
			if now.Sub(old.last) >= noticeTTL {
				delete(v, w)
			}
		}
		ses = &session{}
		v[who] = ses
	}
	if ses != nil && create {
		ses.last = now
	}
	return ses
}
