package mux

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestLocalFilesHardLinkFlips: a name outside the home flipped as fast as a goroutine can between a hard
// link of an innocent file and one of a file under the home, while the rule opens it again and again. The
// count of the home file's names, read while a flip takes its extra name away, can say one; the home is
// searched all the same, so no open ever hands over the home's file.
func TestLocalFilesHardLinkFlips(t *testing.T) {
	home, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(home, "downloads", "acme", "victim", "secret.csv")
	innocent := filepath.Join(outside, "innocent.txt")
	name := filepath.Join(outside, "report.csv")
	if err := errors.Join(os.MkdirAll(filepath.Dir(secret), 0o700), os.WriteFile(secret, []byte("secret"), 0o600),
		os.WriteFile(innocent, []byte("innocent"), 0o600), os.Link(innocent, name)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	flipped := make(chan int)
	go func() {
		runtime.LockOSThread()
		n := 0
		for ; !stop.Load(); n++ {
			tmp := name + ".flip"
			os.Remove(tmp)
			os.Link([]string{secret, innocent}[n%2], tmp)
			os.Rename(tmp, name)
		}
		flipped <- n
	}()
	lf := newLocalFiles(home)
	var opened, passed int
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); opened++ {
		f, err := lf.open(name, nil, nil)
		if err != nil {
			if !strings.Contains(err.Error(), "hard link") && !strings.Contains(err.Error(), "changed while") &&
				!strings.Contains(err.Error(), "does not exist") {
				t.Fatalf("open during the flips: %v", err)
			}
			continue
		}
		b := make([]byte, 16)
		k, _ := f.Read(b)
		f.Close()
		if got := string(b[:k]); got != "innocent" {
			t.Fatalf("open %d during the flips handed over %q; want the innocent file or a refusal", opened, got)
		}
		passed++
	}
	stop.Store(true)
	t.Logf("%d flips, %d opens, %d innocent", <-flipped, opened, passed)
	if passed == 0 {
		t.Error("no open passed: the innocent file was never read")
	}
}
