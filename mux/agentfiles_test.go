package mux

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux/downloads"
	"vibebrowser/mux/sys/osuser"
)

// ownedBy fails the test unless path is owned by u with mode perm.
func ownedBy(t *testing.T, path string, u *osuser.User, perm os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != u.UID || int(st.Gid) != u.GID || fi.Mode().Perm() != perm {
		t.Errorf("%s is owned by %d:%d, mode %04o; want %s's (%d:%d), %04o", path, st.Uid, st.Gid, fi.Mode().Perm(), u.Name, u.UID, u.GID, perm)
	}
}

// completedPath waits for c's "completed" of guid and returns its filePath.
func completedPath(t *testing.T, c *testClient, guid string) string {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, "completed of "+guid, func() bool { return len(progress(c, guid, "completed")) > 0 })
	var done struct{ FilePath string }
	json.Unmarshal(progress(c, guid, "completed")[0].Params, &done)
	return done.FilePath
}

// TestDownloadsForAgentUser: with an agent user and a browser user (SPEC §14), Chrome's incoming folder is
// the browser user's, every owner folder and filed download the agent user's (0700, 0600), a client's own
// copy goes only into a folder its agent user owns, and a symlink Chrome's user put in the incoming folder
// is not followed.
func TestDownloadsForAgentUser(t *testing.T) {
	agent, browser := testkit.SystemUser(t, "vbtest-agent-a"), testkit.SystemUser(t, "vbtest-browser")
	fb := newFakeBrowser(t)
	root := t.TempDir()
	done := make(chan downloads.Download, 8)
	m := startMux(t, fb, Config{DownloadDir: root, Agent: agent, Browser: browser, Hooks: Hooks{Downloaded: func(d downloads.Download) {
		done <- d
	}}})
	ownedBy(t, filepath.Join(root, downloads.IncomingDir), browser, 0o700)

	pw, bh, sneak := newClient(t, m, "pw"), newClient(t, m, "bh"), newClient(t, m, "sneak")
	agentDir := filepath.Join(t.TempDir(), "agent-tmp")
	if err := os.Mkdir(agentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := agent.Chown(agentDir); err != nil {
		t.Fatal(err)
	}
	rootDir := t.TempDir() // a folder the agent user does not own: /etc/cron.d, say
	pw.call("Browser.setDownloadBehavior", `{"behavior":"allowAndName","downloadPath":"`+agentDir+`","eventsEnabled":true}`, "")
	bh.call("Browser.setDownloadBehavior", `{"behavior":"allow","downloadPath":"`+rootDir+`","eventsEnabled":true}`, "")
	sneak.call("Browser.setDownloadBehavior", `{"behavior":"default","eventsEnabled":true}`, "")
	p1, p2, p3 := pw.createTarget("about:blank"), bh.createTarget("about:blank"), sneak.createTarget("about:blank")
	testkit.WaitFor(t, 5*time.Second, "the mux's behavior in force", func() bool { return len(fb.downloadBehaviors()) == 1 })

	fb.beginDownload(p1, "gpw", "report.csv")
	fb.completeDownload("gpw", "pw bytes")
	<-done
	ownedBy(t, filepath.Join(root, "pw"), agent, 0o700)
	ownedBy(t, filepath.Join(root, "pw", "report.csv"), agent, 0o600)
	if got, want := completedPath(t, pw, "gpw"), filepath.Join(agentDir, "gpw"); got != want {
		t.Errorf("completed filePath = %q; want the client's own copy %q", got, want)
	}
	ownedBy(t, filepath.Join(agentDir, "gpw"), agent, 0o600)
	if got := readFile(t, filepath.Join(agentDir, "gpw")); got != "pw bytes" {
		t.Errorf("the client's copy holds %q", got)
	}

	fb.beginDownload(p2, "gbh", "report.csv")
	fb.completeDownload("gbh", "bh bytes")
	<-done
	if got, want := completedPath(t, bh, "gbh"), filepath.Join(root, "bh", "report.csv"); got != want {
		t.Errorf("completed filePath = %q; want the owner folder's %q (the asked folder is not the agent's)", got, want)
	}
	if entries, _ := os.ReadDir(rootDir); len(entries) != 0 {
		t.Errorf("the mux wrote %v into a folder the agent user does not own", entries)
	}

	// Chrome's user replaces the finished file with a symlink to a file only root reads.
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	fb.beginDownload(p3, "gsn", "x.txt")
	fb.mu.Lock()
	if err := os.Symlink(secret, filepath.Join(root, downloads.IncomingDir, "gsn")); err != nil {
		t.Fatal(err)
	}
	fb.sendLocked(`{"method":"Browser.downloadProgress","params":{"guid":"gsn","totalBytes":9,"receivedBytes":9,"state":"completed","filePath":"` +
		filepath.Join(root, downloads.IncomingDir, "gsn") + `"}}`)
	fb.mu.Unlock()
	testkit.WaitFor(t, 5*time.Second, "the sneak's download handled", func() bool { return len(progress(sneak, "gsn", "completed")) > 0 })
	if b, err := os.ReadFile(filepath.Join(root, "sneak", "x.txt")); err == nil && strings.Contains(string(b), "root only") {
		t.Errorf("the mux filed the symlink's target for the agent: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(root, "sneak", "x.txt")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the mux filed a symlink")
	}
	select {
	case d := <-done:
		t.Errorf("the sneak's symlink was filed as a download: %+v", d)
	default:
	}
}
