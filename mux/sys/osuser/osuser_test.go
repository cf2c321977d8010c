package osuser_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux/sys/osuser"
)

func TestLookupUnknownNamesTheFix(t *testing.T) {
	_, err := osuser.Lookup("vbtest-no-such-user")
	if err == nil || !strings.Contains(err.Error(), "useradd --system --no-create-home --shell /usr/sbin/nologin vbtest-no-such-user") {
		t.Fatalf("Lookup of a missing user = %v; want the useradd line", err)
	}
}

func TestLookupAndCredential(t *testing.T) {
	u := testkit.SystemUser(t, "vbtest-agent-a")
	if u.UID == 0 || u.Name != "vbtest-agent-a" || len(u.Groups) == 0 || u.Groups[0] != u.GID {
		t.Fatalf("Lookup = %+v; want a non-root user whose groups start with its primary group", u)
	}
	c := u.Credential()
	if int(c.Uid) != u.UID || int(c.Gid) != u.GID || len(c.Groups) != len(u.Groups) {
		t.Fatalf("Credential = %+v; want %+v's ids and groups only", c, u)
	}
}

// TestMayRead checks the kernel's rule for the user: the owner, group or other bits that apply to it, every
// folder on the way, and symlinks followed to where they lead.
func TestMayRead(t *testing.T) {
	u := testkit.SystemUser(t, "vbtest-agent-a")
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(p string, mode os.FileMode, dir bool, uid, gid int) string {
		t.Helper()
		var err error
		if dir {
			err = os.Mkdir(p, mode)
		} else {
			err = os.WriteFile(p, []byte("x"), mode)
		}
		if err == nil {
			err = os.Chmod(p, mode)
		}
		if err == nil {
			err = os.Chown(p, uid, gid)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	open := mk(filepath.Join(root, "open"), 0o755, true, 0, 0)
	searchOnly := mk(filepath.Join(root, "search-only"), 0o711, true, 0, 0)
	closed := mk(filepath.Join(root, "closed"), 0o700, true, 0, 0)
	groupDir := mk(filepath.Join(root, "group"), 0o750, true, 0, u.GID)
	ownDir := mk(filepath.Join(root, "own"), 0o700, true, u.UID, u.GID)

	otherRead := mk(filepath.Join(open, "other-read"), 0o644, false, 0, 0)
	rootOnly := mk(filepath.Join(open, "root-only"), 0o600, false, 0, 0)
	ownerOnly := mk(filepath.Join(open, "owner-only"), 0o400, false, u.UID, u.GID)
	ownerNoRead := mk(filepath.Join(open, "owner-no-read"), 0o044, false, u.UID, 0) // owner bits apply, not other's
	groupRead := mk(filepath.Join(open, "group-read"), 0o640, false, 0, u.GID)
	throughSearch := mk(filepath.Join(searchOnly, "file"), 0o644, false, 0, 0)
	inClosed := mk(filepath.Join(closed, "file"), 0o644, false, 0, 0)
	inGroupDir := mk(filepath.Join(groupDir, "file"), 0o644, false, 0, 0)
	inOwnDir := mk(filepath.Join(ownDir, "file"), 0o600, false, u.UID, u.GID)
	linkToRootOnly := filepath.Join(ownDir, "link")
	if err := os.Symlink(rootOnly, linkToRootOnly); err != nil {
		t.Fatal(err)
	}
	linkToOwn := filepath.Join(open, "link-to-own")
	if err := os.Symlink(inOwnDir, linkToOwn); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name, path string
		ok         bool
		why        string
	}{
		{"other's read bit", otherRead, true, ""},
		{"a file only root reads", rootOnly, false, "may not read " + rootOnly},
		{"its own file", ownerOnly, true, ""},
		{"its own file without the owner's read bit", ownerNoRead, false, "may not read"},
		{"its group's read bit", groupRead, true, ""},
		{"through a folder it may search but not list", throughSearch, true, ""},
		{"in a folder it may not enter", inClosed, false, "may not enter " + closed},
		{"in a folder its group may enter", inGroupDir, true, ""},
		{"in its own folder", inOwnDir, true, ""},
		{"a symlink of its own to a file only root reads", linkToRootOnly, false, "may not read " + rootOnly},
		{"a symlink to its own file", linkToOwn, true, ""},
		{"a missing file", filepath.Join(open, "nope"), false, "no such file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := u.MayRead(tt.path)
			if tt.ok && err != nil {
				t.Fatalf("MayRead(%s) = %v; want nil", tt.path, err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), tt.why)) {
				t.Fatalf("MayRead(%s) = %v; want an error saying %q", tt.path, err, tt.why)
			}
			cat := exec.Command("cat", tt.path) // the kernel, asked as the user, must agree
			cat.SysProcAttr = &syscall.SysProcAttr{Credential: u.Credential()}
			if out, kerr := cat.CombinedOutput(); (kerr == nil) != tt.ok {
				t.Fatalf("cat %s as %s: %v %s; MayRead said %v", tt.path, u.Name, kerr, out, err)
			}
		})
	}
	if err := (&osuser.User{Name: "root"}).MayRead(inClosed); err != nil {
		t.Errorf("root's MayRead(%s) = %v; want nil", inClosed, err)
	}
}

func TestChownDoesNotFollowSymlinks(t *testing.T) {
	u := testkit.SystemUser(t, "vbtest-agent-a")
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := u.Chown(link); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]int{target: 0, link: u.UID} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if uid := int(fi.Sys().(*syscall.Stat_t).Uid); uid != want {
			t.Errorf("%s is owned by %d; want %d", p, uid, want)
		}
	}
}

// Make makes a missing user once however many ask at once, and takes an existing one as it is.
func TestMakeConcurrently(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making users needs root (CI runs as root)")
	}
	const name = "vbtest-made"
	if _, err := osuser.Lookup(name); err == nil {
		t.Fatalf("user %s exists before the test: remove it (userdel %s)", name, name)
	}
	t.Cleanup(func() {
		userdel, err := exec.LookPath("userdel")
		if err != nil {
			userdel = "/usr/sbin/userdel"
		}
		if out, err := exec.Command(userdel, name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
	})
	var wg sync.WaitGroup
	users := make([]*osuser.User, 4)
	errs := make([]error, len(users))
	for i := range users {
		wg.Go(func() { users[i], errs[i] = osuser.Make(name) })
	}
	wg.Wait()
	for i, u := range users {
		if errs[i] != nil || u.Name != name || u.UID == 0 || u.UID != users[0].UID {
			t.Fatalf("Make(%q) #%d = %+v, %v; want one unprivileged user for every caller (first %+v)", name, i, u, errs[i], users[0])
		}
	}
	again, err := osuser.Make(name)
	if err != nil || again.UID != users[0].UID {
		t.Errorf("Make(%q) of an existing user = %+v, %v; want it as it is (uid %d)", name, again, err, users[0].UID)
	}
}
