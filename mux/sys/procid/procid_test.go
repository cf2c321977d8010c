package procid

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestIdentity(t *testing.T) {
	ctx := context.Background()
	self, ok := Live(ctx, os.Getpid())
	if !ok || self.Start == 0 || len(self.Cmdline) == 0 {
		t.Fatalf("Live(self) = %+v, %v; want a start time and a command line", self, ok)
	}
	if !LiveAs(ctx, os.Getpid(), self.Start) || LiveAs(ctx, os.Getpid(), self.Start-1000) {
		t.Error("LiveAs must accept the recorded start time and refuse another")
	}
	if _, err := Inspect(ctx, 0); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Inspect(0) = %v; want ErrNoProcess", err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// Start returns once the exec has begun; the kernel sets the new command line a moment later, so an
	// empty one is waited out (briefly), a wrong one is not.
	var info Info
	ok = false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if info, ok = Live(ctx, pid); !ok || len(info.Cmdline) > 0 {
			break
		}
	}
	if !ok || !slices.Equal(info.Cmdline, []string{"sleep", "30"}) {
		t.Errorf("Live(child) = %+v, %v; want its command line", info, ok)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	// Unreaped, the child is a zombie: Inspect still reports it, Live calls it dead.
	deadline := time.Now().Add(5 * time.Second)
	for {
		z, err := Inspect(ctx, pid)
		if err == nil && z.Zombie {
			if _, ok := Live(ctx, pid); ok {
				t.Error("Live counts a zombie as running")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("killed child never showed as a zombie: %+v, %v", z, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Wait()
	if _, err := Inspect(ctx, pid); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Inspect of a reaped pid = %v; want ErrNoProcess", err)
	}
}
