package mux

import "sync"

// sendQueue is a client's outgoing queue, bounded in bytes. push never blocks: the upstream reader must
// never wait on one client. When a push would exceed the bound the queue refuses it and the caller
// disconnects the client (into its grace period), so nothing is dropped silently.
type sendQueue struct {
	limit int
	wake  chan struct{} // capacity 1: a pending wake-up is enough, the writer drains everything

	mu sync.Mutex
	// mu guards the fields below.
	frames []frame
	bytes  int
	closed bool
}

func newSendQueue(limit int) *sendQueue {
	return &sendQueue{limit: limit, wake: make(chan struct{}, 1)}
}

// push appends f. It reports false when the queue is closed or f would push it past its byte bound; a
// single frame larger than the bound is accepted into an empty queue, because every message up to the
// upstream size limit must be deliverable.
func (q *sendQueue) push(f frame) bool {
	if !q.pushQuiet(f) {
		return false
	}
	q.signal()
	return true
}

// pushQuiet is push without waking the writer: for a caller that writes the queue itself right after,
// or wakes it with signal (a wake-up it does not need costs a thread hand-off per message).
func (q *sendQueue) pushQuiet(f frame) bool {
	n := f.size()
	q.mu.Lock()
	if q.closed || (q.bytes > 0 && q.bytes+n > q.limit) {
		q.mu.Unlock()
		return false
	}
	q.frames = append(q.frames, f)
	q.bytes += n
	q.mu.Unlock()
	return true
}

// signal wakes the writer.
func (q *sendQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pushForce appends f whatever the bound; for the mux's own few, small commands, which must never be lost.
func (q *sendQueue) pushForce(f frame) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.frames = append(q.frames, f)
	q.bytes += f.size()
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take removes and returns everything queued.
func (q *sendQueue) take(buf []frame) []frame {
	q.mu.Lock()
	buf = append(buf[:0], q.frames...)
	clear(q.frames)
	q.frames = q.frames[:0]
	if cap(q.frames) > 1024 {
		q.frames = nil // give back the slice a burst grew
	}
	q.bytes = 0
	q.mu.Unlock()
	return buf
}

func (q *sendQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *sendQueue) depth() (frames, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames), q.bytes
}
