// Package netid is a store's network identity (SPEC §16): its upstream proxy's URL, time zone and language,
// each checked, and the proxy shown only with its password redacted.
package netid

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/language"
)

// ProxyForm is the accepted form of a store's proxy, for messages.
const ProxyForm = "http://, https://, socks5:// or socks5h:// then [user:password@]host:port, or none"

// Proxy schemes.
const (
	SchemeHTTP    = "http"
	SchemeHTTPS   = "https"
	SchemeSOCKS5  = "socks5"
	SchemeSOCKS5H = "socks5h"
)

// Proxy is a store's upstream proxy. Its password is the one secret a store's settings hold: String, for
// the store's state and its keeper only, has it; Redacted, for everything shown, does not.
type Proxy struct {
	Scheme   string
	Host     string // a name or an IP address, without brackets
	Port     int
	User     string
	Password string
}

// ParseProxy reads a proxy URL of ProxyForm's shape. Its errors name the rule and never repeat the password.
func ParseProxy(s string) (Proxy, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Proxy{}, fmt.Errorf("proxy %q is not a proxy URL: want %s", RedactURL(s), ProxyForm)
	}
	p := Proxy{Scheme: strings.ToLower(u.Scheme), Host: u.Hostname()}
	switch p.Scheme {
	case SchemeHTTP, SchemeHTTPS, SchemeSOCKS5, SchemeSOCKS5H:
	default:
		return Proxy{}, fmt.Errorf("proxy scheme %q is not supported: want %s", u.Scheme, ProxyForm)
	}
	if p.Host == "" {
		return Proxy{}, fmt.Errorf("proxy %s has no host: want %s", RedactURL(s), ProxyForm)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port < 1 || port > 65535 {
		return Proxy{}, fmt.Errorf("proxy %s needs a port from 1 to 65535 after its host: want %s", RedactURL(s), ProxyForm)
	}
	p.Port = port
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return Proxy{}, fmt.Errorf("proxy %s has a path, query or fragment: want %s", RedactURL(s), ProxyForm)
	}
	if u.User != nil {
		p.User = u.User.Username()
		p.Password, _ = u.User.Password()
		if p.User == "" {
			return Proxy{}, fmt.Errorf("proxy %s has a password but no user name: want user:password@", RedactURL(s))
		}
	}
	return p, nil
}

// Addr is the proxy's host:port.
func (p Proxy) Addr() string { return net.JoinHostPort(p.Host, strconv.Itoa(p.Port)) }

// String is the whole URL, password included: for the store's state and its keeper, never for a person.
func (p Proxy) String() string {
	u := url.URL{Scheme: p.Scheme, Host: p.Addr()}
	switch {
	case p.Password != "":
		u.User = url.UserPassword(p.User, p.Password)
	case p.User != "":
		u.User = url.User(p.User)
	}
	return u.String()
}

// Redacted is the URL as it is shown: scheme://user:***@host:port.
func (p Proxy) Redacted() string {
	out := p.Scheme + "://"
	if p.User != "" {
		out += url.User(p.User).String()
		if p.Password != "" {
			out += ":***"
		}
		out += "@"
	}
	return out + p.Addr()
}

// RedactURL shows a stored proxy URL without its password, whatever its shape: a URL with no host is shown
// as its scheme alone, and one without a scheme not at all.
func RedactURL(s string) string {
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "***")
		}
		return strings.Replace(u.String(), "%2A%2A%2A@", "***@", 1)
	}
	if scheme, _, ok := strings.Cut(s, "://"); ok && !strings.ContainsAny(scheme, ":@/") {
		return scheme + "://(unreadable)"
	}
	return "(unreadable)"
}

// CheckTimezone accepts an IANA time zone name that Go's time.LoadLocation knows (Europe/Berlin); "Local"
// and "" are refused: the point is a zone other than the machine's.
func CheckTimezone(zone string) error {
	if zone == "" || zone == "Local" {
		return fmt.Errorf("time zone %q: want an IANA zone name such as Europe/Berlin or America/New_York", zone)
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return fmt.Errorf("time zone %q is not in the time zone database (%v): want an IANA zone name such as "+
			"Europe/Berlin or America/New_York", zone, err)
	}
	return nil
}

// CheckLang accepts a BCP 47 language tag (de-DE, en-US, pt-BR) and returns its canonical form.
func CheckLang(tag string) (string, error) {
	t, err := language.Parse(tag)
	if err != nil || tag == "" || t == language.Und {
		return "", fmt.Errorf("language %q is not a BCP 47 tag: want one such as de-DE, en-US or pt-BR", tag)
	}
	return t.String(), nil
}
