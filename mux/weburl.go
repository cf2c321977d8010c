package mux

import "strings"

// The URL rule of SPEC §13 ("nor through the browser itself"): a client opens web content only. The
// browser's own pages reach past the mux: chrome://inspect lists every tenant's tabs with links that open
// DevTools on them, chrome://history and chrome://downloads show what the others did, file:// shows local
// files, and view-source:, filesystem: or a blob of a browser page wrap the same.

// urlRule is the reason the URL rule gives, in every refusal and log line it causes.
const urlRule = "a client may open only web content (http, https, data, blob of a web page, about:blank, " +
	"about:srcdoc): browser pages (chrome:, devtools:, chrome-extension:, view-source:) and local files (file:, " +
	"filesystem:) reach past the per-client isolation"

// webURL reports whether a client may open u: an http, https or data URL, a blob of a web page (or of an
// opaque origin), about:blank or about:srcdoc. Empty (Chrome's about:blank) passes. Anything else is
// refused, including a URL Chrome would not parse: the rule never guesses what Chrome makes of it.
func webURL(u string) bool {
	u = chromeTrim(u)
	if u == "" {
		return true
	}
	scheme, rest, ok := splitScheme(u)
	if !ok {
		return false
	}
	switch scheme {
	case "http", "https", "data":
		return true
	case "about":
		if i := strings.IndexAny(rest, "?#"); i >= 0 {
			rest = rest[:i]
		}
		return rest == "blank" || rest == "srcdoc"
	case "blob":
		// blob:<origin>/<uuid>: the origin of the page that made it, or "null" for an opaque one.
		if strings.HasPrefix(rest, "null/") {
			return true
		}
		inner, _, ok := splitScheme(rest)
		return ok && (inner == "http" || inner == "https")
	}
	return false
}

// landedURL reports whether a client's target may show u: what webURL allows, and the error page Chrome
// commits when a web page fails to load. (Chrome 156 reports a failed load under the URL it tried; a build
// that reported its error page instead must not cost the agent its tab over a refused connection.)
func landedURL(u string) bool {
	return webURL(u) || strings.HasPrefix(strings.ToLower(chromeTrim(u)), "chrome-error://chromewebdata/")
}

// chromeTrim does what Chrome's URL parser does first: it drops leading and trailing C0 controls and
// spaces, and every tab and newline inside ("chr\tome://inspect" is chrome://inspect to Chrome).
func chromeTrim(u string) string {
	u = strings.TrimFunc(u, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(u, "\t\n\r") {
		u = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, u)
	}
	return u
}

// splitScheme splits u at its scheme, lower-cased; ok is false when u does not start with one
// (ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":").
func splitScheme(u string) (scheme, rest string, ok bool) {
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return strings.ToLower(u[:i]), u[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// closeStrayLocked closes a client's target that shows a page the URL rule would have refused (a DevTools
// window opened from somewhere, a redirect, a page script that found a way), and reports whether it did.
// Human tabs are the person's: they may show anything.
func (m *Mux) closeStrayLocked(t *target) bool {
	if t.owner == nil || t.owner.id == HumanClient || t.closing || landedURL(t.url) {
		return false
	}
	m.log.Warn().Str("client", t.owner.id).Str("target", t.id).Str("type", t.typ).Str("url", t.url).Str("rule", urlRule).
		Msg("a client's tab showed a page the mux does not let clients open: closed")
	m.closeTargetLocked(t)
	return true
}
