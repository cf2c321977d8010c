package testkit

import (
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	WaitFor(t, 5*time.Second, "three polls", func() bool { return n.Add(1) >= 3 })
	if got := n.Load(); got != 3 {
		t.Fatalf("cond called %d times; want 3", got)
	}
}

// fatalRecorder is a testing.TB whose Fatalf is recorded instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func TestWaitForFailsAtTheDeadline(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != rec {
				panic(r)
			}
		}()
		WaitFor(rec, 20*time.Millisecond, "never", func() bool { return false })
	}()
	if rec.msg == "" {
		t.Fatal("WaitFor with a condition that never holds did not fail the test")
	}
}

func TestFilesListsFilesRelativeAndSorted(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"b/2.txt", "a.txt", "b/c/1.txt"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"a.txt", filepath.Join("b", "2.txt"), filepath.Join("b", "c", "1.txt")}
	if got := Files(root); !slices.Equal(got, want) {
		t.Errorf("Files(%s) = %q; want %q", root, got, want)
	}
	if got := Files(filepath.Join(root, "missing")); len(got) != 0 {
		t.Errorf("Files of a missing folder = %q; want none", got)
	}
}

// ForOtherUsers gives everyone a readable copy and leaves the checkout's files as they were.
func TestForOtherUsers(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o600} {
		src := t.TempDir()
		if err := os.MkdirAll(filepath.Join(src, "js", "lib"), 0o700); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(src, "js", "lib", "a.js")
		if err := os.WriteFile(f, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(f, mode)
		t.Chdir(src)
		root := ForOtherUsers(t, "js")
		for _, p := range []string{filepath.Join(root, "js"), filepath.Join(root, "js", "lib"), filepath.Join(root, "js", "lib", "a.js")} {
			fi, err := os.Stat(p)
			if err != nil || fi.Mode().Perm()&0o004 == 0 {
				t.Errorf("ForOtherUsers, a %04o file: %s is %v (%v); want it readable by others", mode, p, fi.Mode(), err)
			}
		}
		if fi, _ := os.Stat(f); fi.Mode().Perm() != mode {
			t.Errorf("ForOtherUsers changed the original %s to %v; want %04o", f, fi.Mode(), mode)
		}
	}
}
