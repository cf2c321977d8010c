package mux

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

func TestLocalFilesRule(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	outside := filepath.Join(root, "outside")
	own := filepath.Join(home, "downloads", "acme", "task1")
	for _, d := range []string{filepath.Join(home, "profiles", "other", "Default"), own, outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) string {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cookies := write(filepath.Join(home, "profiles", "other", "Default", "Cookies"))
	stateDB := write(filepath.Join(home, "state.db"))
	mine := write(filepath.Join(own, "report.csv"))
	upload := write(filepath.Join(outside, "upload.txt"))
	link := func(old, name string, hard bool) string {
		p := filepath.Join(outside, name)
		var err error
		if hard {
			err = os.Link(old, p)
		} else {
			err = os.Symlink(old, p)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	symToCookies := link(cookies, "innocent.txt", false)
	symToHome := link(home, "homelink", false)
	symToMine := link(mine, "to-mine.csv", false)
	hardToState := link(stateDB, "hard.db", true)
	hardIntoOwn := filepath.Join(own, "planted")
	if err := os.Link(cookies, hardIntoOwn); err != nil {
		t.Fatal(err)
	}
	ownHard := filepath.Join(outside, "mine-again.csv") // a hard link of the client's own file (playwright's copy)
	if err := os.Link(mine, ownHard); err != nil {
		t.Fatal(err)
	}

	lf := newLocalFiles(home)
	tests := []struct {
		name, path string
		ok         bool
		why        string
	}{
		{"a file outside the home", upload, true, ""},
		{"the task's own download", mine, true, ""},
		{"a symlink to the task's own download", symToMine, false, "through a symlink"},
		{"a hard link of the task's own download", ownHard, true, ""},
		{"another store's cookies", cookies, false, "under the manager's home"},
		{"state.db", stateDB, false, "under the manager's home"},
		{"a symlink outside the home into it", symToCookies, false, "through a symlink"},
		{"a path through a symlinked home", filepath.Join(symToHome, "state.db"), false, "through a symlink"},
		{"dot-dot into the home", filepath.Join(outside, "..", "home", "state.db"), false, "under the manager's home"},
		{"dot-dot out of the own folder", filepath.Join(own, "..", "..", "..", "state.db"), false, "under the manager's home"},
		{"a hard link outside the home", hardToState, false, "hard link"},
		{"a hard link planted in the own folder", hardIntoOwn, false, "hard link"},
		{"a relative path", "state.db", false, "not an absolute path"},
		{"a missing file", filepath.Join(outside, "nope"), false, "does not exist"},
		{"a folder", outside, false, "not a regular file"},
		{"a device", "/dev/null", false, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := lf.open(tt.path, []string{own}, nil)
			if err == nil {
				f.Close()
			}
			if tt.ok && err != nil {
				t.Fatalf("check(%q) = %v; want it allowed", tt.path, err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), tt.why)) {
				t.Fatalf("check(%q) = %v; want a refusal saying %q", tt.path, err, tt.why)
			}
		})
	}
	if f, err := (localFiles{}).open(stateDB, nil, nil); err != nil {
		t.Errorf("with no home, open(%q) = %v; want it allowed", stateDB, err)
	} else {
		f.Close()
	}
}

func TestLocalFilesRefused(t *testing.T) {
	home := t.TempDir()
	secret := filepath.Join(home, "state.db")
	if err := os.WriteFile(secret, []byte("SQLite format 3"), 0o600); err != nil {
		t.Fatal(err)
	}
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{Home: home, DownloadDir: filepath.Join(home, "downloads", "acme")})
	c := newClient(t, m, "task1-w2")
	sid := c.attach(c.createTarget("about:blank"))
	own := filepath.Join(home, "downloads", "acme", "task1")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(own, "a.txt") // a --worker slot's own folder is its task's
	if err := os.WriteFile(mine, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	q := func(p string) string { return `"` + p + `"` }
	tests := []struct {
		method, params string
		refused        bool
	}{
		{"DOM.setFileInputFiles", `{"files":[` + q(mine) + `,` + q(secret) + `],"nodeId":1}`, true},
		{"Input.dispatchDragEvent", `{"type":"drop","x":1,"y":1,"data":{"items":[],"files":[` + q(secret) + `],"dragOperationsMask":1}}`, true},
		{"Page.handleFileChooser", `{"action":"accept","files":[` + q(secret) + `]}`, true},
		{"DOM.setFileInputFiles", `{"files":[` + q(mine) + `],"nodeId":1}`, false},
		{"Input.dispatchDragEvent", `{"type":"dragEnter","x":1,"y":1,"data":{"items":[],"dragOperationsMask":1}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			before := len(fb.got(tt.method))
			r := c.call(tt.method, tt.params, sid)
			reached := len(fb.got(tt.method)) > before
			if tt.refused {
				if r.Error == nil || !strings.Contains(r.Error.Message, fileRule) || !strings.Contains(r.Error.Message, secret) {
					t.Fatalf("%s = %+v; want a refusal naming %s and the rule", tt.method, r, secret)
				}
				if reached {
					t.Fatalf("the refused %s reached the browser", tt.method)
				}
			} else if !reached {
				t.Fatalf("%s of the client's own file = %+v; want it forwarded", tt.method, r)
			}
		})
	}
}

// TestLocalFilesAgentUser: with an agent user (SPEC §14) a file outside the home passes only when that user
// may read it itself: the file's bits for it, and every folder on the way.
func TestLocalFilesAgentUser(t *testing.T) {
	agent := testkit.SystemUser(t, "vbtest-agent-a")
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} { // t.TempDir's folders are 0700: let the agent in
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(root, "home")
	open, closed := filepath.Join(root, "open"), filepath.Join(root, "closed")
	for d, mode := range map[string]os.FileMode{home: 0o711, open: 0o755, closed: 0o700} {
		if err := os.Mkdir(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, mode os.FileMode) string {
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	everyone := write(filepath.Join(open, "upload.txt"), 0o644)
	rootOnly := write(filepath.Join(open, "cookies"), 0o600)
	inClosed := write(filepath.Join(closed, "upload.txt"), 0o644)
	agents := write(filepath.Join(open, "agents.txt"), 0o600)
	if err := agent.Chown(agents); err != nil {
		t.Fatal(err)
	}
	lf := newLocalFiles(home)
	for _, tt := range []struct {
		name, path string
		ok         bool
	}{
		{"a file everyone reads", everyone, true},
		{"the agent's own file", agents, true},
		{"a file only root reads", rootOnly, false},
		{"a readable file in a folder the agent cannot enter", inClosed, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := lf.open(tt.path, nil, agent)
			if err == nil {
				f.Close()
			}
			if tt.ok && err != nil {
				t.Fatalf("check(%q) = %v; want it allowed", tt.path, err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "not readable by the store's agent user vbtest-agent-a")) {
				t.Fatalf("check(%q) = %v; want a refusal naming the agent user", tt.path, err)
			}
		})
	}
	if f, err := newLocalFiles("").open(rootOnly, nil, agent); err == nil {
		f.Close()
		t.Errorf("with no home, an agent user's check of %s passed; want it refused", rootOnly)
	}
}

// TestUploadsAreCopies: the browser gets the mux's copy of a file a client hands it, in that client's own
// uploads folder, never the client's path; a name through a symlink is refused; the copies go with the client.
func TestUploadsAreCopies(t *testing.T) {
	home := t.TempDir()
	dl := filepath.Join(home, "downloads", "acme")
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{Home: home, DownloadDir: dl, Grace: Off})
	c := newClient(t, m, "task1")
	sid := c.attach(c.createTarget("about:blank"))
	outside := t.TempDir()
	upload := filepath.Join(outside, "upload.txt")
	if err := os.WriteFile(upload, []byte("agent's own file"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.call("DOM.setFileInputFiles", `{"files":["`+upload+`"],"nodeId":1}`, sid)
	if r.Error != nil {
		t.Fatalf("setFileInputFiles(%s) = %+v", upload, r.Error)
	}
	var p struct{ Files []string }
	if err := json.Unmarshal(fb.got("DOM.setFileInputFiles")[0].Params, &p); err != nil || len(p.Files) != 1 {
		t.Fatalf("the browser got %s (%v)", fb.got("DOM.setFileInputFiles")[0].Params, err)
	}
	cp := p.Files[0]
	if !strings.HasPrefix(cp, filepath.Join(dl, UploadsDir, "task1")+"/") || filepath.Base(cp) != "upload.txt" {
		t.Fatalf("the browser got the path %s; want a copy named upload.txt under %s", cp, filepath.Join(dl, UploadsDir, "task1"))
	}
	if err := os.WriteFile(upload, []byte("changed after the call"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(cp); err != nil || string(b) != "agent's own file" {
		t.Fatalf("the copy reads %q (%v); want the file as it was handed", b, err)
	}
	link := filepath.Join(outside, "link.txt")
	if err := os.Symlink(upload, link); err != nil {
		t.Fatal(err)
	}
	if r := c.call("DOM.setFileInputFiles", `{"files":["`+link+`"],"nodeId":1}`, sid); r.Error == nil || !strings.Contains(r.Error.Message, "through a symlink") {
		t.Fatalf("setFileInputFiles(%s) = %+v; want a refusal: a symlink", link, r)
	}
	c.ws.Close()
	testkit.WaitFor(t, 5*time.Second, "the client's copies removed with it", func() bool {
		_, err := os.Stat(filepath.Join(dl, UploadsDir, "task1"))
		return os.IsNotExist(err)
	})
}

// TestLocalFilesSwappedWhileOpened: a name renamed over after the open (the hard link swap of SPEC §20's
// tries: open a link to a file of the home's, put an innocent file back under the name before the count is
// read) is refused, since the file held open is no longer what the name says.
func TestLocalFilesSwappedWhileOpened(t *testing.T) {
	home := t.TempDir()
	secret := filepath.Join(home, "downloads", "acme", "victim", "secret.csv")
	outside := t.TempDir()
	innocent := filepath.Join(outside, "innocent.txt")
	name := filepath.Join(outside, "report.csv")
	if err := errors.Join(os.MkdirAll(filepath.Dir(secret), 0o700), os.WriteFile(secret, []byte("secret"), 0o600),
		os.WriteFile(innocent, []byte("innocent"), 0o600), os.Link(secret, name)); err != nil {
		t.Fatal(err)
	}
	lf := newLocalFiles(home)
	f, err := openNoFollow(name, nil) // the mux's open lands on the secret's link
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Link(innocent, name+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(name+".new", name); err != nil { // the secret's extra name is gone: one link left
		t.Fatal(err)
	}
	if err := lf.judgeOpen(f, name, name, nil); err == nil || !strings.Contains(err.Error(), "changed while the mux opened it") {
		t.Fatalf("judgeOpen of a name swapped after the open = %v; want it refused", err)
	}
}
