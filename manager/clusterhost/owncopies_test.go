package clusterhost

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux/sys/osuser"
)

// A client's own-copy request lands on the receiving host as a local client's does: allowAndName at
// <dir>/<guid>, allow under a unique name in the folder; a request that breaks a rule (a relative or unclean
// path, a symlinked folder, a file already at the exact path) gets no copy, and the client is told the file in
// its owner folder, where it also landed.
func TestOwnCopyArrives(t *testing.T) {
	r := startArrivals(t)
	base := t.TempDir()
	dir := func(name string) string {
		d := filepath.Join(base, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	exact, allow := dir("pw"), dir("bh")
	if err := os.WriteFile(filepath.Join(allow, "r1.csv"), []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	taken := dir("taken")
	if err := os.WriteFile(filepath.Join(taken, "guid-r7.csv"), []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := dir("target")
	if err := os.Symlink(target, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		file string // the download's name (its GUID is "guid-" + file)
		own  ownCopyHead
		want string // the path the client is told; "" for the owner folder's file
	}{
		{"allowAndName", "r0.csv", ownCopyHead{Dir: exact, Exact: true}, filepath.Join(exact, "guid-r0.csv")},
		{"allow", "r1.csv", ownCopyHead{Dir: allow}, filepath.Join(allow, "r1 (1).csv")},
		{"a folder not made yet", "r2.csv", ownCopyHead{Dir: filepath.Join(base, "new", "dl"), Exact: true},
			filepath.Join(base, "new", "dl", "guid-r2.csv")},
		{"a relative path", "r3.csv", ownCopyHead{Dir: "pw", Exact: true}, ""},
		{"a path that climbs", "r4.csv", ownCopyHead{Dir: exact + "/../target", Exact: true}, ""},
		{"a NUL", "r5.csv", ownCopyHead{Dir: exact + "\x00x", Exact: true}, ""},
		{"a symlinked folder", "r6.csv", ownCopyHead{Dir: filepath.Join(base, "link"), Exact: true}, ""},
		{"a file at the exact path", "r7.csv", ownCopyHead{Dir: taken, Exact: true}, ""},
		{"a folder under a symlink", "r8.csv", ownCopyHead{Dir: filepath.Join(base, "link", "sub")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := download(tt.file, "bytes of "+tt.file)
			h.Own = &ownCopyHead{Dir: tt.own.Dir, Exact: tt.own.Exact}
			want := tt.want
			if want == "" {
				want = filepath.Join(r.folder, tt.file)
			}
			got := r.deliver(h, "bytes of "+tt.file)
			if got != want {
				t.Fatalf("own copy %+v: client told %q; want %q", tt.own, got, want)
			}
			if b, err := os.ReadFile(got); err != nil || string(b) != "bytes of "+tt.file {
				t.Errorf("%s holds %q (%v); want the download", got, b, err)
			}
			if b, _ := os.ReadFile(filepath.Join(r.folder, tt.file)); string(b) != "bytes of "+tt.file {
				t.Errorf("the owner folder's %s holds %q; want the download there too", tt.file, b)
			}
		})
	}
	if files := testkit.Files(target); len(files) != 0 {
		t.Errorf("the symlink's target folder holds %q; want nothing", files)
	}
	if b, _ := os.ReadFile(filepath.Join(taken, "guid-r7.csv")); string(b) != "theirs" {
		t.Errorf("the file at the exact path holds %q; want it untouched", b)
	}
	if b, _ := os.ReadFile(filepath.Join(allow, "r1.csv")); string(b) != "theirs" {
		t.Errorf("the file of the allow folder holds %q; want it untouched", b)
	}
}

// ownCopyAgent is the agent user of TestOwnCopyForAgent (useradd --system, idempotently); it needs root.
const ownCopyAgent = "vbtest-dlcopy"

// With the store's agent user on the receiving host, the client's own copy goes only into a folder that user
// owns, and is that user's; a folder of another's gets none.
func TestOwnCopyForAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("agent users need root")
	}
	if _, err := osuser.Lookup(ownCopyAgent); err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", ownCopyAgent).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v: %s", ownCopyAgent, err, out)
		}
	}
	agent, err := osuser.Lookup(ownCopyAgent)
	if err != nil {
		t.Fatal(err)
	}
	r := startArrivalsWith(t, map[string]string{"VIBE_AGENT_USER": ownCopyAgent})
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	mine, others := filepath.Join(base, "mine"), filepath.Join(base, "others")
	for _, d := range []string{mine, others} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := agent.Chown(mine); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file, dir, want string
	}{
		{"a folder of the agent user's", "a.csv", mine, filepath.Join(mine, "guid-a.csv")},
		{"a folder of another's", "b.csv", others, filepath.Join(r.folder, "b.csv")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := download(tt.file, "agent bytes")
			h.Own = &ownCopyHead{Dir: tt.dir, Exact: true}
			if got := r.deliver(h, "agent bytes"); got != tt.want {
				t.Fatalf("own copy in %s: client told %q; want %q", tt.dir, got, tt.want)
			}
			fi, err := os.Stat(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != agent.UID || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: uid %d, mode %v; want the agent user's (%d), 0600", tt.want, st.Uid, fi.Mode().Perm(), agent.UID)
			}
		})
	}
	if files := testkit.Files(others); len(files) != 0 {
		t.Errorf("the folder of another's holds %q; want nothing", files)
	}
}
