package logins

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"vibebrowser/manager/seal"
)

func testKey(t *testing.T, b byte) *seal.Key {
	t.Helper()
	k, err := seal.NewKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestJarRoundTrip(t *testing.T) {
	home := t.TempDir()
	key := testKey(t, 1)
	taken := time.Date(2026, 12, 5, 1, 2, 3, 0, time.UTC)
	cookies := []Cookie{
		{Name: "sid", Value: "s3cr3t-login-value", Domain: "shop.example", Path: "/", Expires: 1e10, HTTPOnly: true, Secure: true},
		{Name: "cart", Value: "c1", Domain: ".shop.example", Path: "/", Expires: -1, Session: true},
	}
	content := Encode(cookies, taken)
	if _, _, err := ReadJar(key, home, "shop"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadJar of a store with no checkpoint: error = %v; want os.ErrNotExist", err)
	}
	if err := WriteJar(key, home, "shop", content, nil); err != nil {
		t.Fatal(err)
	}
	got, written, err := ReadJar(key, home, "shop")
	if err != nil || !bytes.Equal(got, content) || time.Since(written) > time.Minute {
		t.Fatalf("ReadJar = %q, %v, %v; want what was written, now", got, written, err)
	}
	jar, err := Decode(got)
	if err != nil || !jar.Taken.Equal(taken) || len(jar.Cookies) != 2 {
		t.Fatalf("Decode = %+v, %v; want 2 cookies taken at %v", jar, err, taken)
	}

	path := JarPath(home, "shop")
	raw, _ := os.ReadFile(path)
	for _, clear := range []string{"s3cr3t-login-value", "sid", "cart", "shop.example"} {
		if bytes.Contains(raw, []byte(clear)) {
			t.Errorf("the jar file holds %q in the clear", clear)
		}
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700, filepath.Dir(filepath.Dir(path)): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s mode %v (%v); want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".jar-*")); len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}

	sealed, at, err := ReadSealedJar(home, "shop")
	if err != nil || !bytes.Equal(sealed, raw) || !at.Equal(written) {
		t.Errorf("ReadSealedJar = %d bytes at %v, %v; want the file's %d at %v", len(sealed), at, err, len(raw), written)
	}
	if got, err := OpenJar(key, "shop", sealed); err != nil || !bytes.Equal(got, content) {
		t.Errorf("OpenJar of the sealed file = %q, %v; want its content", got, err)
	}
	if _, err := OpenJar(key, "other", sealed); !errors.Is(err, seal.ErrOpen) {
		t.Errorf("OpenJar of shop's jar as other's = %v; want seal.ErrOpen", err)
	}

	tests := []struct {
		name string
		key  *seal.Key
		slug string
	}{
		{"another key", testKey(t, 2), "shop"},
		{"another store's", key, "other"},
	}
	os.MkdirAll(filepath.Dir(JarPath(home, "other")), 0o700)
	os.WriteFile(JarPath(home, "other"), raw, 0o600) // shop's jar copied as other's
	for _, tt := range tests {
		if _, _, err := ReadJar(tt.key, home, tt.slug); !errors.Is(err, seal.ErrOpen) {
			t.Errorf("ReadJar with %s: error = %v; want seal.ErrOpen", tt.name, err)
		}
	}
	os.WriteFile(path, append(raw[:len(raw)-1], raw[len(raw)-1]^1), 0o600)
	if _, _, err := ReadJar(key, home, "shop"); !errors.Is(err, seal.ErrOpen) {
		t.Errorf("ReadJar of an altered jar: error = %v; want seal.ErrOpen", err)
	}
	if _, err := Decode([]byte(`{"version":99}`)); err == nil {
		t.Error("Decode of a future version: no error")
	}
}

func TestSumIgnoresOrder(t *testing.T) {
	a := Cookie{Name: "a", Value: "1", Domain: "x", Path: "/"}
	b := Cookie{Name: "b", Value: "2", Domain: "x", Path: "/"}
	if Sum([]Cookie{a, b}) != Sum([]Cookie{b, a}) {
		t.Error("Sum depends on the cookies' order")
	}
	b2 := b
	b2.Value = "3"
	if Sum([]Cookie{a, b}) == Sum([]Cookie{a, b2}) {
		t.Error("Sum did not change with a value")
	}
	if !bytes.Equal(Encode([]Cookie{a, b}, time.Unix(0, 0)), Encode([]Cookie{b, a}, time.Unix(0, 0))) {
		t.Error("Encode depends on the cookies' order")
	}
}

func TestMissing(t *testing.T) {
	now := time.Unix(2_000_000_000, 0)
	future, past := float64(now.Unix()+3600), float64(now.Unix()-1)
	login := Cookie{Name: "sid", Value: "new", Domain: "shop.example", Path: "/", Expires: future, HTTPOnly: true}
	older := login
	older.Value = "old"
	shorter := login
	shorter.Expires = future - 600
	jitter := login
	jitter.Expires = future + 0.4
	session := Cookie{Name: "cart", Value: "c", Domain: ".shop.example", Path: "/", Expires: -1, Session: true}
	expired := Cookie{Name: "gone", Value: "g", Domain: "shop.example", Path: "/", Expires: past}
	part := Cookie{Name: "p", Value: "1", Domain: "cdn.example", Path: "/", Expires: future, PartitionKey: json.RawMessage(`{"topLevelSite":"https://a.example","hasCrossSiteAncestor":false}`)}
	partElsewhere := part
	partElsewhere.PartitionKey = json.RawMessage(`{"topLevelSite":"https://b.example","hasCrossSiteAncestor":false}`)
	tests := []struct {
		name       string
		checkpoint []Cookie
		have       []Cookie
		want       []string // values set back
	}{
		{"the browser lacks it", []Cookie{login}, nil, []string{"new"}},
		{"the browser holds an older value", []Cookie{login}, []Cookie{older}, []string{"new"}},
		{"the browser holds another expiry", []Cookie{login}, []Cookie{shorter}, []string{"new"}},
		{"the same, to the second", []Cookie{login}, []Cookie{jitter}, nil},
		{"the same", []Cookie{login, session}, []Cookie{session, login}, nil},
		{"a session cookie lost", []Cookie{session}, nil, []string{"c"}},
		{"expired in the checkpoint", []Cookie{expired}, nil, nil},
		{"a partition the browser lacks", []Cookie{part}, []Cookie{partElsewhere}, []string{"1"}},
		{"a cookie only the browser has is left alone", nil, []Cookie{login}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range Missing(tt.checkpoint, tt.have, now) {
				got = append(got, c.Value)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Missing(%s) = %q; want %q", tt.name, got, tt.want)
			}
		})
	}
	// A browser whose profile is not the manager's keeps what it holds: only the cookies it lacks come back.
	for _, tt := range []struct {
		name       string
		checkpoint []Cookie
		have       []Cookie
		want       []string
	}{
		{"the browser lacks it", []Cookie{login, expired}, nil, []string{"new"}},
		{"the browser holds another value", []Cookie{login}, []Cookie{older}, nil},
		{"another partition", []Cookie{part}, []Cookie{partElsewhere}, []string{"1"}},
	} {
		var got []string
		for _, c := range Lacking(tt.checkpoint, tt.have, now) {
			got = append(got, c.Value)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Lacking(%s) = %q; want %q", tt.name, got, tt.want)
		}
	}
}

func TestParams(t *testing.T) {
	tests := []struct {
		name string
		c    Cookie
		want string
	}{
		{"host-only by its URL", Cookie{Name: "a", Value: "1", Domain: "127.0.0.1", Path: "/", Expires: 2e9, HTTPOnly: true},
			`{"name":"a","value":"1","url":"http://127.0.0.1/","path":"/","httpOnly":true,"expires":2000000000}`},
		{"secure host-only", Cookie{Name: "a", Value: "1", Domain: "shop.example", Path: "/x", Secure: true, Session: true, Expires: -1},
			`{"name":"a","value":"1","url":"https://shop.example/x","path":"/x","secure":true}`},
		{"domain cookie by its domain", Cookie{Name: "a", Value: "1", Domain: ".shop.example", Path: "/", Expires: 2e9, SameSite: "Lax", SourcePort: 443, SourceScheme: "Secure"},
			`{"name":"a","value":"1","domain":".shop.example","path":"/","sameSite":"Lax","expires":2000000000,"sourceScheme":"Secure","sourcePort":443}`},
		{"partitioned", Cookie{Name: "a", Value: "1", Domain: "cdn.example", Path: "/", Secure: true, Session: true, Expires: -1, PartitionKey: json.RawMessage(`{"topLevelSite":"https://a.example","hasCrossSiteAncestor":false}`)},
			`{"name":"a","value":"1","url":"https://cdn.example/","path":"/","secure":true,"partitionKey":{"topLevelSite":"https://a.example","hasCrossSiteAncestor":false}}`},
	}
	for _, tt := range tests {
		if got := string(Params([]Cookie{tt.c})); got != "["+tt.want+"]" {
			t.Errorf("Params(%s) = %s; want [%s]", tt.name, got, tt.want)
		}
	}
}

func TestPrepareProfile(t *testing.T) {
	fresh := t.TempDir()
	if portable, err := PrepareProfile(fresh, nil); !portable || err != nil {
		t.Errorf("PrepareProfile(a new profile) = %v, %v; want portable", portable, err)
	}
	if _, err := os.Stat(filepath.Join(fresh, PortableMarker)); err != nil {
		t.Errorf("a new profile was not marked portable: %v", err)
	}
	old := t.TempDir()
	os.WriteFile(filepath.Join(old, "Local State"), []byte("{}"), 0o600)
	if portable, err := PrepareProfile(old, nil); portable || err != nil {
		t.Errorf("PrepareProfile(an older profile) = %v, %v; want not portable, carried over once", portable, err)
	}
	if err := MarkPortable(old, nil); err != nil {
		t.Fatal(err)
	}
	if portable, err := PrepareProfile(old, nil); !portable || err != nil {
		t.Errorf("PrepareProfile(a profile carried over) = %v, %v; want portable", portable, err)
	}
}

// TestPace: a jar is read only after something may have changed it, a script's command at a slower pace,
// once more after a read that found a change, and never while nothing happens.
func TestPace(t *testing.T) {
	const every = 2 * time.Second
	t0 := time.Unix(1_000_000, 0)
	var p Pace
	p.Read(t0, 5, 7, false)
	tests := []struct {
		name             string
		after            time.Duration
		changes, scripts uint64
		want             bool
	}{
		{"nothing happened", every, 5, 7, false},
		{"nothing happened for long", time.Hour, 5, 7, false},
		{"a navigation or a Set-Cookie", every, 6, 7, true},
		{"scripts ran, soon after the read", every, 5, 9, false},
		{"scripts ran, ScriptEvery intervals after the read", ScriptEvery * every, 5, 9, true},
	}
	for _, tt := range tests {
		if got := p.Due(t0.Add(tt.after), every, tt.changes, tt.scripts); got != tt.want {
			t.Errorf("Due(%s) = %v; want %v", tt.name, got, tt.want)
		}
	}
	p.Read(t0, 6, 7, true)
	if !p.Due(t0.Add(every), every, 6, 7) {
		t.Error("Due after a read that found a change = false; want one more read (a Set-Cookie may land after its signal)")
	}
	p.Read(t0.Add(every), 6, 7, false)
	if p.Due(t0.Add(2*every), every, 6, 7) {
		t.Error("Due after a read that found nothing new = true; want quiet")
	}
	p.Again()
	if !p.Due(t0.Add(2*every), every, 6, 7) {
		t.Error("Due after Again = false; want a read")
	}
}

func TestCheckpointerWritesOnlyChanges(t *testing.T) {
	home := t.TempDir()
	c := Checkpointer{Key: testKey(t, 3), Home: home, Slug: "shop"}
	a := `{"name":"a","value":"1","domain":"x","path":"/","expires":-1,"session":true}`
	b := `{"name":"b","value":"2","domain":"x","path":"/","expires":-1,"session":true}`
	b3 := `{"name":"b","value":"3","domain":"x","path":"/","expires":-1,"session":true}`
	tests := []struct {
		name    string
		raw     string
		written bool
	}{
		{"the first", "[" + a + "," + b + "]", true},
		{"the same bytes", "[" + a + "," + b + "]", false},
		{"the same jar in another order", "[" + b + "," + a + "]", false},
		{"a value changed", "[" + a + "," + b3 + "]", true},
	}
	for _, tt := range tests {
		n, err := c.Take([]byte(tt.raw), time.Now())
		if err != nil || (n > 0) != tt.written {
			t.Errorf("Take(%s) = %d, %v; want written %v", tt.name, n, err, tt.written)
		}
	}
	content, _, err := ReadJar(c.Key, home, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if jar, err := Decode(content); err != nil || len(jar.Cookies) != 2 || jar.Cookies[1].Value != "3" {
		t.Errorf("the checkpoint holds %+v, %v; want a=1, b=3", jar.Cookies, err)
	}
}
