package testkit

import (
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
