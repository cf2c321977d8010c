package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The hand-written JSON of the shim's fast path must be encoding/json's, byte for byte when written and value
// for value (and error for error) when read.

// awkward are strings encoding/json escapes or repairs: quotes, controls, HTML, U+2028/9, invalid UTF-8.
var awkward = []string{"", "plain", `q"uo\te`, "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f", "<a href=x>&amp;</a>",
	"line\u2028para\u2029", "ünïcødé 日本 🙂", "bad \xff\xfe utf8 \xc3", "\xed\xa0\x80 surrogate bytes", "a/b"}

func TestAppendJSONStringIsEncodingJSONs(t *testing.T) {
	for _, s := range awkward {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s; want %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s; want %s", s, got, want)
		}
	})
}

func TestEnsureRequestJSON(t *testing.T) {
	tests := []EnsureRequest{
		{},
		{Kind: KindStore, StoreID: "0d1c", ClientID: "a1b2c3d4-w2", BUName: "acme-a1b2c3d4-w2", TaskID: "a1b2c3d4"},
		{Kind: KindWeb, ClientID: "manual", BUName: "web", Via: ViaMCP},
		{Kind: awkward[2], StoreID: awkward[5], ClientID: awkward[8], BUName: awkward[6], TaskID: awkward[4], Via: awkward[3]},
	}
	for _, req := range tests {
		want, _ := json.Marshal(req)
		if got := req.appendJSON(nil); !bytes.Equal(got, want) {
			t.Errorf("EnsureRequest%+v.appendJSON() = %s; want %s", req, got, want)
		}
	}
}

func TestCallReportJSON(t *testing.T) {
	start := time.Date(2026, 12, 5, 1, 2, 3, 400500600, time.FixedZone("x", 3600+30*60))
	tests := []CallReport{
		{},
		{Client: "a1b2c3d4", Session: "acme-a1b2c3d4", Start: start, End: start.Add(time.Second), Outcome: CallOK},
		{Client: "a1b2c3d4-w3", Session: "s", Slot: 3, Tool: "navigate", Args: []string{"--x", awkward[2], ""},
			ArgsCut: true, Start: time.Now(), End: time.Now().UTC(), Exit: -1, Outcome: CallTimeout, Rule: awkward[5],
			Code: awkward[3], CodeCut: true, Stdout: awkward[8], StdoutCut: true, Stderr: awkward[6], StderrCut: true,
			Untold: []string{"stdin", "stdout (kept open)"}},
		{Args: []string{}, Untold: []string{}, Start: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
	}
	for _, rep := range tests {
		want, _ := json.Marshal(rep)
		got, err := rep.appendJSON(nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("CallReport.appendJSON() = %s, %v; want %s", got, err, want)
		}
	}
	bad := CallReport{Start: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, want := json.Marshal(bad); want == nil {
		t.Fatal("encoding/json took year 10000")
	}
	if got, err := bad.appendJSON(nil); err == nil {
		t.Errorf("CallReport{Start: year 10000}.appendJSON() = %s; want an error, as encoding/json has", got)
	}
}

// answers are ensure answers and configs, valid and not, for the readers.
var answers = []string{
	`{"cdp_ws":"ws://127.0.0.1:9400/c/x/client-a","download_dir":"/d","lease_s":300,"timeline":"full"}`,
	`{"cdp_ws":"ws://x","extra":{"a":[1,2.5e-3,{"b":null}],"c":"\u00e9"},"more":[true,false,null,-0]}`,
	` { "CDP_WS" : "case" , "Timeline":"meta" } `, `{"cdp_ws":"a","cdp_ws":"last wins"}`, `null`, `{}`,
	`{"cdp_ws":"esc \" \\ \/ \b \f \n \r \t \u0041 \ud83d\ude42 \ud800 \udc00x \ud800\u0041"}`,
	`{"cdp_ws":"raw ` + "\xff\xc3 \xe2\x80\xa8" + `"}`, `{"cdp_ws":null,"lease_s":null}`,
	`{"lease_s":-0}`, `{"lease_s":1.0}`, `{"lease_s":1e3}`, `{"lease_s":99999999999999999999}`, `{"lease_s":"1"}`,
	`{"cdp_ws":1}`, `{"cdp_ws":[]}`, `{"cdp_ws":{}}`, `{"cdp_ws":true}`, `{"lease_s":01}`, `{"lease_s":-}`,
	`{"lease_s":1.}`, `{"lease_s":.5}`, `{"lease_s":1e}`, `{"lease_s":+1}`, `{"cdp_ws":"\x01"}`, `{"cdp_ws":"\q"}`,
	`{"cdp_ws":"\u12"}`, `{"cdp_ws":"open`, `{"cdp_ws":"x",}`, `{,}`, `{"a" 1}`, `{"a":1 "b":2}`, `[]`, `"s"`, `1`,
	`{"x":[1,]}`, `{"x":[1 2]}`, `{"x":tru}`, `{"x":nul}`, `{} x`, `{}{}`, ``, ` `, `{`, `{"a":`, "\ufeff{}",
	`{'a':1}`, `{"cdp_ws":"a"}  ` + "\t\r\n", "{}\x00", "{\"cdp_ws\":\"a\"}\x00",
}

func TestEnsureResponseDecodeIsEncodingJSONs(t *testing.T) {
	for _, in := range answers {
		checkEnsureDecode(t, in)
	}
}

func FuzzEnsureResponseDecode(f *testing.F) {
	for _, in := range answers {
		f.Add(in)
	}
	f.Fuzz(checkEnsureDecode)
}

func checkEnsureDecode(t *testing.T, in string) {
	var want, got EnsureResponse
	wantErr := json.Unmarshal([]byte(in), &want)
	gotErr := got.decode([]byte(in))
	if (gotErr != nil) != (wantErr != nil) || wantErr == nil && got != want {
		t.Errorf("EnsureResponse.decode(%q) = %+v, %v; want %+v, %v", in, got, gotErr, want, wantErr)
	}
}

func TestParseShimConfigIsEncodingJSONs(t *testing.T) {
	configs := []string{
		`{"format":1,"kind":"guard"}`, `{"Format":1,"KIND":"guard"}`, `{"format":1,"kind":"guard","extra":1}`,
		`{"format":1,"kind":"guard"} {}`, `{"format":1,"kind":"guard"} x`, `{"format":"1","kind":"guard"}`,
		`{"format":1.0,"kind":"guard"}`, `{"format":null,"kind":"guard"}`, `{"format":1,"kind":null}`,
		`{"format":1,"kind":"web","manager_socket":"/s","real_bu":"/b","runtime_dir":"/r","tmp_dir":"/t","worker_slots":3,` +
			`"call_timeout_s":5,"kill_grace_s":1,"reload_timeout_s":2,"ensure_timeout_s":9,"agent_socket":"/a","store_id":"","slug":""}`,
		`{"format":1,"kind":"store","store_id":"0d1c","slug":"acme","manager_socket":"/s","real_bu":"/b","runtime_dir":"/r","tmp_dir":"/t"}`,
		`{"format":1,"kind":"gu\u0061rd"}`, `{"form\u0061t":1,"kind":"guard"}`, `{"format":1,"kind":"guard",}`,
		`{"format":1,"format":2,"kind":"guard"}`, `{"format":2,"format":1,"kind":"guard"}`,
	}
	for _, in := range append(configs, answers...) {
		checkConfigDecode(t, in)
	}
}

func FuzzParseShimConfig(f *testing.F) {
	f.Add(`{"format":1,"kind":"web","manager_socket":"/s","real_bu":"/b","runtime_dir":"/r","tmp_dir":"/t","worker_slots":3}`)
	for _, in := range answers {
		f.Add(in)
	}
	f.Fuzz(checkConfigDecode)
}

// checkConfigDecode compares ParseShimConfig with the strict encoding/json decoding it replaces.
func checkConfigDecode(t *testing.T, in string) {
	t.Helper()
	want, wantErr := parseShimConfigReflect([]byte(in))
	got, gotErr := ParseShimConfig([]byte(in))
	if (gotErr != nil) != (wantErr != nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("ParseShimConfig(%q) = %+v, %v; want %+v, %v", in, got, gotErr, want, wantErr)
	}
}

// parseShimConfigReflect is ParseShimConfig as it was written with encoding/json.
func parseShimConfigReflect(data []byte) (*ShimConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg ShimConfig
	if err := dec.Decode(&cfg); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func TestJSONReaderMessages(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{`, "unexpected EOF"},
		{`{"a":1}`, `unknown field "a"`},
		{`{"format":"1"}`, "cannot unmarshal"},
		{`{"format":1} 2`, "trailing data"},
	}
	for _, tt := range tests {
		if _, err := ParseShimConfig([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseShimConfig(%s) = %v; want an error saying %q", tt.in, err, tt.want)
		}
	}
}

func TestJSONReaderDepth(t *testing.T) {
	for _, depth := range []int{maxJSONDepth - 1, maxJSONDepth + 1} {
		in := `{"x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
		checkEnsureDecode(t, in)
	}
}
