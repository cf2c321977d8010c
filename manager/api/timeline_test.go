package api

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCallReportCut(t *testing.T) {
	r := CallReport{
		Code:   "é" + strings.Repeat("x", 1<<20), // 1 MiB of code, a two-byte character first
		Stdout: strings.Repeat("o", 100<<10) + "the end",
		Stderr: strings.Repeat("é", 20<<10),
		Rule:   strings.Repeat("r", 10<<10),
		Args:   []string{"-c", strings.Repeat("a", 20<<10), "dropped"},
		Untold: []string{"stdin", "stdout", "stderr", "more", strings.Repeat("u", 200)},
	}
	if !r.Cut() {
		t.Fatal("Cut() = false on a report far over its bounds")
	}
	for name, f := range map[string]string{"code": r.Code, "stdout": r.Stdout, "stderr": r.Stderr, "rule": r.Rule} {
		if !utf8.ValidString(f) {
			t.Errorf("the cut %s is not valid UTF-8", name)
		}
	}
	switch {
	case len(r.Code) != CallCodeMax || !r.CodeCut || !strings.HasPrefix(r.Code, "éxx"):
		t.Errorf("code %d bytes, cut %v; want its first %d, marked", len(r.Code), r.CodeCut, CallCodeMax)
	case len(r.Stdout) != CallOutputMax || !r.StdoutCut || !strings.HasSuffix(r.Stdout, "the end"):
		t.Errorf("stdout %d bytes, cut %v; want its last %d, marked", len(r.Stdout), r.StdoutCut, CallOutputMax)
	case len(r.Stderr) > CallOutputMax || len(r.Stderr) < CallOutputMax-1 || !r.StderrCut:
		t.Errorf("stderr %d bytes, cut %v; want its last whole characters within %d, marked", len(r.Stderr), r.StderrCut, CallOutputMax)
	case len(r.Rule) != CallRuleMax || !strings.HasSuffix(r.Rule, " [cut]"):
		t.Errorf("rule %d bytes; want %d, marked", len(r.Rule), CallRuleMax)
	case len(r.Args) != 2 || len(r.Args[0])+len(r.Args[1]) != CallArgsMax || !r.ArgsCut:
		t.Errorf("args %d of %d bytes, cut %v; want the first %d bytes, marked", len(r.Args), len(r.Args[0])+len(r.Args[1]), r.ArgsCut, CallArgsMax)
	case !slices.Equal(r.Untold, []string{"stdin", "stdout", "stderr"}):
		t.Errorf("untold %q; want three", r.Untold)
	}

	small := CallReport{Code: "print(1)", Stdout: "1\n", Args: []string{"-c"}, Untold: []string{"stdin"}}
	want := small
	if small.Cut() || small.Code != want.Code || small.CodeCut || small.Stdout != want.Stdout || small.ArgsCut {
		t.Errorf("Cut() of a report within its bounds changed it: %+v", small)
	}
}

// TestEntryBody: every kind field of Entry is its Body, under the kind its JSON key names, so an entry goes
// into the state and comes back as the same value (a kind field added without a case in Body fails here).
func TestEntryBody(t *testing.T) {
	if kind, body := (Entry{}).Body(); kind != "" || body != nil {
		t.Errorf("the empty entry's body: %q %v; want none", kind, body)
	}
	et := reflect.TypeFor[Entry]()
	seen := map[string]bool{}
	for f := range et.Fields() {
		if f.Type.Kind() != reflect.Pointer {
			continue
		}
		var e Entry
		field := reflect.ValueOf(&e).Elem().FieldByIndex(f.Index)
		field.Set(reflect.New(f.Type.Elem()))
		kind, body := e.Body()
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if kind != key || body != field.Interface() {
			t.Errorf("Entry.%s set: Body() = %q, %v; want %q and the field's value", f.Name, kind, body, key)
		}
		seen[kind] = true
	}
	for _, k := range []string{EntryCall, EntryShot, EntryNav, EntryTab, EntryDownload, EntryHandoff, EntryTakeover, EntryFault} {
		if !seen[k] {
			t.Errorf("kind %q has no field of Entry", k)
		}
	}
}
