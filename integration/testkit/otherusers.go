package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ForOtherUsers copies the checkout's folders dirs (relative to the test's package folder, e.g. "js" and
// "node_modules") side by side into a new folder every user may enter and read, and returns it. A test that
// runs a script as another OS user (a store's agent user) must run the copy: the checkout may be in a folder
// only its owner enters (a clone in root's 0700 home, or a mktemp -d folder), where that user reads nothing.
// Files are hard-linked where the temporary folder is on the checkout's file system (node_modules is large),
// copied otherwise; the folder goes when the test ends.
func ForOtherUsers(t testing.TB, dirs ...string) string {
	t.Helper()
	root, err := os.MkdirTemp("", "vibe-for-others-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		src, err := filepath.Abs(d)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, filepath.Base(d))
		// A hard link shares the checkout's file, mode and all: taken only when every file is readable by
		// others already, so nothing of the checkout is changed; the folders are the copy's own.
		linked := exec.Command("cp", "-al", src, dst).Run() == nil
		if linked {
			out, err := exec.Command("find", dst, "-type", "f", "!", "-perm", "-o+r", "-print", "-quit").Output()
			linked = err == nil && len(out) == 0
		}
		what := "d" // only the copy's own folders
		if !linked {
			os.RemoveAll(dst)
			if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
				t.Fatalf("copy %s for other users: %v\n%s", src, err, out)
			}
			what = "f,d"
		}
		if out, err := exec.Command("find", dst, "-type", what, "-exec", "chmod", "a+rX", "{}", "+").CombinedOutput(); err != nil {
			t.Fatalf("chmod %s: %v\n%s", dst, err, out)
		}
	}
	return root
}
