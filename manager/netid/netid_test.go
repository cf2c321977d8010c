package netid

import (
	"strings"
	"testing"
)

func TestParseProxy(t *testing.T) {
	for _, tc := range []struct {
		in, redacted, refuse string
	}{
		{in: "http://proxy.example:3128", redacted: "http://proxy.example:3128"},
		{in: "HTTPS://u:p%40ss@10.0.0.1:443", redacted: "https://u:***@10.0.0.1:443"},
		{in: "socks5://alice:s3cret@[::1]:1080", redacted: "socks5://alice:***@[::1]:1080"},
		{in: "socks5h://bob@gw.example:1080/", redacted: "socks5h://bob@gw.example:1080"},
		{in: "ftp://h:21", refuse: `scheme "ftp" is not supported`},
		{in: "http://h", refuse: "needs a port"},
		{in: "http://h:0", refuse: "needs a port"},
		{in: "http://h:70000", refuse: "needs a port"},
		{in: "proxy.example:3128", refuse: "is not a proxy URL"},
		{in: "user:hunter2@proxy.example:3128", refuse: "is not a proxy URL"},
		{in: "http://u:hunter2@h:1/path", refuse: "path, query or fragment"},
		{in: "http://:hunter2@h:1", refuse: "no user name"},
		{in: "", refuse: "not a proxy URL"},
	} {
		p, err := ParseProxy(tc.in)
		if tc.refuse != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refuse) {
				t.Errorf("ParseProxy(%q) = %v; want a refusal saying %q", tc.in, err, tc.refuse)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("ParseProxy(%q)'s refusal %q shows the password", tc.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseProxy(%q): %v", tc.in, err)
			continue
		}
		if got := p.Redacted(); got != tc.redacted {
			t.Errorf("ParseProxy(%q).Redacted() = %q; want %q", tc.in, got, tc.redacted)
		}
		again, err := ParseProxy(p.String())
		if err != nil || again != p {
			t.Errorf("ParseProxy(%q).String() = %q reads back as %+v, %v", tc.in, p.String(), again, err)
		}
		if got := RedactURL(p.String()); got != tc.redacted {
			t.Errorf("RedactURL(%q) = %q; want %q", p.String(), got, tc.redacted)
		}
	}
	if p, _ := ParseProxy("https://u:p%40ss@10.0.0.1:443"); p.Password != "p@ss" {
		t.Errorf("the password %q; want p@ss, unescaped", p.Password)
	}
	if got := RedactURL("http://u:pw@h:1"); got != "http://u:***@h:1" {
		t.Errorf("RedactURL = %q", got)
	}
	if got := RedactURL("::not a url pw"); strings.Contains(got, "pw") {
		t.Errorf("RedactURL of garbage = %q shows it", got)
	}
}

func TestTimezoneAndLang(t *testing.T) {
	for _, z := range []string{"Europe/Berlin", "America/New_York", "UTC"} {
		if err := CheckTimezone(z); err != nil {
			t.Errorf("CheckTimezone(%q): %v", z, err)
		}
	}
	for _, z := range []string{"", "Local", "Mars/Olympus", "../etc/passwd"} {
		if err := CheckTimezone(z); err == nil || !strings.Contains(err.Error(), "Europe/Berlin") {
			t.Errorf("CheckTimezone(%q) = %v; want a refusal with the form", z, err)
		}
	}
	for in, want := range map[string]string{"de-DE": "de-DE", "en-us": "en-US", "pt-BR": "pt-BR", "fr": "fr"} {
		if got, err := CheckLang(in); err != nil || got != want {
			t.Errorf("CheckLang(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "english", "de_DE!", "und"} {
		if _, err := CheckLang(in); err == nil || !strings.Contains(err.Error(), "BCP 47") {
			t.Errorf("CheckLang(%q) = %v; want a refusal naming BCP 47", in, err)
		}
	}
}
