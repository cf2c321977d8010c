package procid

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestStartTimeIsFixed: a process's start time is the moment it started, read the same every time, also
// for a program whose name holds the characters /proc/<pid>/stat wraps it in.
func TestStartTimeIsFixed(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep on PATH")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(t.TempDir(), "a) b (c")
	if err := os.WriteFile(odd, b, 0o755); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	cmd := exec.Command(odd, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ctx := context.Background()
	first, err := Inspect(ctx, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// The start is counted in whole ticks (10 ms) from a boot time in whole seconds.
	if d := time.UnixMilli(first.Start).Sub(before); d < -1100*time.Millisecond || d > 2*time.Second {
		t.Errorf("start time %v is %v from the moment the child was started; want within a second", time.UnixMilli(first.Start), d)
	}
	for i := range 2000 {
		info, err := Inspect(ctx, cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if info.Start != first.Start {
			t.Fatalf("read %d: start time %d; the first read said %d", i, info.Start, first.Start)
		}
	}
}
