package seal

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testKey(t *testing.T) *Key {
	t.Helper()
	k, err := ParseKey(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRoundTrip(t *testing.T) {
	k := testKey(t)
	for _, n := range []int{0, 1, chunkSize - 1, chunkSize, chunkSize + 1, 3 * chunkSize, 3*chunkSize + 17} {
		plain := make([]byte, n)
		rand.Read(plain)
		sealed := k.Seal(plain, "jar:a")
		got, err := k.Open(sealed, "jar:a")
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("Open(Seal(%d bytes)) = %d bytes, %v; want the same bytes", n, len(got), err)
		}
		if n >= 16 && bytes.Contains(sealed, plain[:16]) {
			t.Fatalf("sealed %d bytes hold the plain text", n)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	k := testKey(t)
	plain := bytes.Repeat([]byte("cookie=secret;"), 20000) // > 4 chunks
	sealed := k.Seal(plain, "jar:a")
	other, _ := ParseKey(strings.Repeat("cd", 32))
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)/2] ^= 1
	tests := []struct {
		name    string
		key     *Key
		sealed  []byte
		purpose string
	}{
		{"other purpose", k, sealed, "jar:b"},
		{"other key", other, sealed, "jar:a"},
		{"a bit flipped", k, flipped, "jar:a"},
		{"cut at a chunk boundary", k, sealed[:len(magic)+prefixLen+2*(chunkSize+16)], "jar:a"},
		{"cut mid chunk", k, sealed[:len(sealed)-5], "jar:a"},
		{"last chunk dropped", k, sealed[:len(sealed)-(len(plain)%chunkSize+16)], "jar:a"},
		{"not sealed", k, plain, "jar:a"},
		{"empty", k, nil, "jar:a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.key.Open(tt.sealed, tt.purpose)
			if !errors.Is(err, ErrOpen) {
				t.Fatalf("Open = %d bytes, %v; want ErrOpen", len(got), err)
			}
		})
	}
}

func TestStreamInPieces(t *testing.T) {
	k := testKey(t)
	var buf bytes.Buffer
	w, err := k.NewWriter(&buf, "snapshot:a")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for i := range 1000 {
		p := bytes.Repeat([]byte{byte(i)}, i*7)
		w.Write(p)
		want.Write(p)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := k.NewReader(&buf, "snapshot:a")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read %d bytes, %v; want %d bytes", len(got), err, want.Len())
	}
}

func TestLoadKey(t *testing.T) {
	home := t.TempDir()
	k1, err := LoadKey(home, "")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(home, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want 0600", fi, err)
	}
	k2, err := LoadKey(home, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Open(k1.Seal([]byte("x"), "p"), "p"); err != nil {
		t.Fatalf("the key read back does not open what the made key sealed: %v", err)
	}
	for _, bad := range []string{"short", strings.Repeat("zz", 32), strings.Repeat("ab", 31)} {
		if _, err := LoadKey(home, bad); err == nil || !strings.Contains(err.Error(), "VIBE_SNAPSHOT_KEY") {
			t.Errorf("LoadKey(env %q) = %v; want an error naming VIBE_SNAPSHOT_KEY", bad, err)
		}
	}
	if _, err := LoadKey(home, "q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s="); err != nil {
		t.Errorf("base64 key refused: %v", err)
	}
}

// A key opening also another (a cluster's secret, and the home's key before it) opens what either sealed,
// in one chunk or many, and seals with its own only; a third key's file still does not open.
func TestOpeningAlso(t *testing.T) {
	home := testKey(t)
	cluster, _ := ParseKey(strings.Repeat("cd", 32))
	third, _ := ParseKey(strings.Repeat("ef", 32))
	both := cluster.OpeningAlso(home)
	for _, n := range []int{10, 3*chunkSize + 17} {
		plain := make([]byte, n)
		rand.Read(plain)
		for _, tt := range []struct {
			name string
			by   *Key
			want bool
		}{{"home", home, true}, {"cluster", cluster, true}, {"third", third, false}} {
			got, err := both.Open(tt.by.Seal(plain, "jar:a"), "jar:a")
			if opened := err == nil && bytes.Equal(got, plain); opened != tt.want {
				t.Errorf("Open of %d bytes sealed by the %s key = %v; want opened %v", n, tt.name, err, tt.want)
			}
		}
		sealed := both.Seal(plain, "jar:a")
		if _, err := home.Open(sealed, "jar:a"); !errors.Is(err, ErrOpen) {
			t.Errorf("the home key opens what the cluster key sealed (%v): it must seal with the cluster key only", err)
		}
		if got, err := cluster.Open(sealed, "jar:a"); err != nil || !bytes.Equal(got, plain) {
			t.Errorf("the cluster key does not open what it sealed: %v", err)
		}
	}
}
