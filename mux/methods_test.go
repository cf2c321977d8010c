package mux

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cdprotoMethod is a command of the pinned cdproto (the protocol Chromium speaks) with its params' JSON names.
type cdprotoMethod struct {
	name   string
	params []string
}

// cdprotoMethods parses the pinned cdproto's sources: every Command constant of every domain and the JSON
// names of its Params struct's fields.
func cdprotoMethods(t *testing.T) []cdprotoMethod {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/chromedp/cdproto").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Fatalf("go list cdproto: %v (%s)", err, out)
	}
	domains, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	constRe := regexp.MustCompile(`^Command(\w+)$`)
	var methods []cdprotoMethod
	for _, d := range domains {
		src := filepath.Join(dir, d.Name(), d.Name()+".go")
		if !d.IsDir() || d.Name() == "cdp" {
			continue
		}
		if _, err := os.Stat(src); err != nil {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), src, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		params := map[string][]string{}
		consts := map[string]string{}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					st, ok := s.Type.(*ast.StructType)
					if !ok || !strings.HasSuffix(s.Name.Name, "Params") {
						continue
					}
					for _, fld := range st.Fields.List {
						if fld.Tag == nil {
							continue
						}
						tag, _ := strconv.Unquote(fld.Tag.Value)
						name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
						params[strings.TrimSuffix(s.Name.Name, "Params")] = append(params[strings.TrimSuffix(s.Name.Name, "Params")], name)
					}
				case *ast.ValueSpec:
					for i, n := range s.Names {
						if m := constRe.FindStringSubmatch(n.Name); m != nil && i < len(s.Values) {
							if lit, ok := s.Values[i].(*ast.BasicLit); ok {
								v, _ := strconv.Unquote(lit.Value)
								consts[m[1]] = v
							}
						}
					}
				}
			}
		}
		for short, method := range consts {
			methods = append(methods, cdprotoMethod{name: method, params: params[short]})
		}
	}
	if len(methods) < 500 {
		t.Fatalf("found %d methods in cdproto; the parse is broken", len(methods))
	}
	return methods
}

// reachRe matches the params that may name a URL, a path, a file, a proxy, a stream or a target: each method
// that has one is decided in the table by name (judged, refused, or forwarded with a note saying why that
// is safe), never by its domain's default alone.
var reachRe = regexp.MustCompile(`(?i)(url|path|file|proxy|handle|stream|^origin$|^targetId$|^browserContextId$)`)

// TestMethodTableDecidesTheProtocol: every method of the pinned protocol is decided by the table, and every
// method that takes a URL, a path or a handle is decided by name.
func TestMethodTableDecidesTheProtocol(t *testing.T) {
	events := regexp.MustCompile(`^[A-Z]\w*\.[a-z]\w*$`)
	for _, mth := range cdprotoMethods(t) {
		if !events.MatchString(mth.name) {
			continue
		}
		r, ok := lookupRoute(mth.name)
		if !ok {
			domain, _, _ := strings.Cut(mth.name, ".")
			t.Errorf("%s: the table has no entry for it nor a default for %s", mth.name, domain)
			continue
		}
		if _, named := methodRoutes[mth.name]; named || r.refuse != "" || r.check != nil {
			continue
		}
		for _, p := range mth.params {
			if reachRe.MatchString(p) {
				t.Errorf("%s takes %s, but the table decides it by its domain's default only: judge it, refuse it, "+
					"or forward it with a note that says why that is safe", mth.name, p)
			}
		}
	}
}

// TestMethodTableInReadme: the README's security section prints the table as the code has it.
func TestMethodTableInReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), MethodTable()) {
		if os.Getenv("UPDATE_README_TABLE") != "" {
			t.Logf("the table:\n%s", MethodTable())
		}
		t.Fatal("README.md does not print mux.MethodTable() as the code has it: paste the table that " +
			"`UPDATE_README_TABLE=1 go test ./mux -run TestMethodTableInReadme -v` prints into its security section")
	}
}

// TestMethodTableDecisions: what the table refuses, and what it lets through, through a real mux.
func TestMethodTableDecisions(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	other := newClient(t, m, "o")
	sid := c.attach(c.createTarget("about:blank"))
	osid := other.attach(other.createTarget("about:blank"))
	tests := []struct {
		name, method, params, session string
		why                           string // "" = forwarded
	}{
		{"unknown method", "Foo.bar", "", sid, "not one of them"},
		{"a page domain on the browser session", "Network.enable", "", "", "only to a session of the client's own tabs"},
		{"a page domain on the client's own session", "Network.enable", "", sid, ""},
		{"tracing on the browser session", "Tracing.start", "", "", "a trace records the browser process"},
		{"tracing on a page session", "Tracing.start", "", sid, "a trace records the browser process"},
		{"system info", "SystemInfo.getProcessInfo", "", "", "every process"},
		{"a context with a proxy", "Target.createBrowserContext", `{"proxyServer":"http://127.0.0.1:1"}`, "", "carries proxyServer"},
		{"a context with a bypass list", "Target.createBrowserContext", `{"proxyBypassList":"*"}`, "", "carries proxyBypassList"},
		{"a context with its own proxy, null", "Target.createBrowserContext", `{"proxyServer":null}`, "", "carries proxyServer"},
		{"a context without a proxy", "Target.createBrowserContext", `{}`, "", ""},
		{"a guessed stream", "IO.read", `{"handle":"1"}`, "", "not one of this client's streams"},
		{"the default context's cookies cleared", "Storage.clearCookies", `{}`, "", "the default browser context"},
		{"the default context's cookies read", "Storage.getCookies", `{}`, "", ""},
		{"a renderer crash", "Page.crash", "", sid, "other clients' tabs"},
		{"desktop mirroring", "Cast.startDesktopMirroring", `{"sinkName":"x"}`, sid, "whole screen"},
		{"a DevTools window", "Target.openDevTools", `{"targetId":"x"}`, "", "DevTools window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(fb.got(tt.method))
			r := c.call(tt.method, tt.params, tt.session)
			reached := len(fb.got(tt.method)) > before
			if tt.why == "" {
				if r.Error != nil || !reached {
					t.Fatalf("%s %s = %+v (reached %v); want it forwarded", tt.method, tt.params, r.Error, reached)
				}
				return
			}
			if r.Error == nil || !strings.Contains(r.Error.Message, "is refused by the mux") ||
				!strings.Contains(r.Error.Message, tt.method) || !strings.Contains(r.Error.Message, tt.why) {
				t.Fatalf("%s %s = %+v; want a refusal naming the method and %q", tt.method, tt.params, r, tt.why)
			}
			if reached {
				t.Fatalf("the refused %s reached the browser", tt.method)
			}
		})
	}

	// A stream the browser handed c is c's to read and close, and no one else's.
	pdf := result[struct {
		Stream string `json:"stream"`
	}](t, c.call("Page.printToPDF", `{"transferMode":"ReturnAsStream"}`, sid)).Stream
	if r := other.call("IO.read", `{"handle":"`+pdf+`"}`, osid); r.Error == nil || !strings.Contains(r.Error.Message, "not one of this client's streams") {
		t.Fatalf("another client's IO.read of c's stream %s = %+v; want it refused", pdf, r)
	}
	if r := c.call("IO.read", `{"handle":"`+pdf+`"}`, ""); r.Error != nil || !strings.Contains(string(r.Result), "pdf bytes") {
		t.Fatalf("c's IO.read of its own stream = %+v; want the data", r)
	}
	if r := c.call("IO.close", `{"handle":"`+pdf+`"}`, ""); r.Error != nil {
		t.Fatalf("c's IO.close of its own stream = %+v", r.Error)
	}
	if r := c.call("IO.read", `{"handle":"`+pdf+`"}`, ""); r.Error == nil {
		t.Fatal("c read its stream after closing it; want the handle gone")
	}
}

// TestJudgedCommandsAreReencoded: a judged command reaches Chromium as the mux decoded it (keys as it read
// them, escapes gone, judged values re-encoded), while a forwarded one keeps its bytes.
func TestJudgedCommandsAreReencoded(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	tid := c.createTarget("about:blank")
	sid := c.attach(tid)
	c.call("Target.activateTarget", `{"\u0074argetId":"`+tid+`","extra":{"a" : [1, 2]}}`, "")
	got := fb.got("Target.activateTarget")
	if len(got) != 1 {
		t.Fatalf("activateTarget reached the browser %d times; want once", len(got))
	}
	if raw := got[0].raw; !strings.Contains(raw, `"targetId":"`+tid+`"`) || strings.Contains(raw, `\u0074`) || !strings.Contains(raw, `"extra":{"a" : [1, 2]}`) {
		t.Fatalf("the browser got %s; want the judged targetId re-encoded and the rest as validated", raw)
	}
	c.call("Runtime.evaluate", `{"expression" : "1"}`, sid)
	if raw := fb.got("Runtime.evaluate")[0].raw; !strings.Contains(raw, `{"expression" : "1"}`) {
		t.Fatalf("a forwarded command reached the browser as %s; want its own bytes", raw)
	}
}
