package wrapshim

import (
	"sync"
	"syscall"
	"time"
)

// deadline bounds a call: at its timeout the child's process group gets SIGTERM, and SIGKILL a grace later.
// Its timers run code only if they fire, so the shim's own goroutine can wait for the child in waitid
// itself: a call that ends in time costs no goroutine, and its end wakes no other thread.
type deadline struct {
	// mu guards the fields below. A kill holds it, so that once stop returns no kill can come: the child is
	// then reaped, and its group id may be reused.
	mu       sync.Mutex
	pgid     int // 0 once stopped
	timedOut bool
	term     *time.Timer
	kill     *time.Timer // set when term fired
}

// startDeadline arms the deadline of the child whose process group is pgid.
func startDeadline(pgid int, timeout, grace time.Duration) *deadline {
	d := &deadline{pgid: pgid}
	d.term = time.AfterFunc(timeout, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.pgid == 0 {
			return
		}
		d.timedOut = true
		_ = syscall.Kill(-d.pgid, syscall.SIGTERM)
		d.kill = time.AfterFunc(grace, func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.pgid != 0 {
				_ = syscall.Kill(-d.pgid, syscall.SIGKILL)
			}
		})
	})
	return d
}

// stop disarms the deadline once the child has exited, before it is reaped, and reports whether the timeout
// fired.
func (d *deadline) stop() bool {
	d.term.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pgid = 0
	if d.kill != nil {
		d.kill.Stop()
	}
	return d.timedOut
}
