package wrapshim

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"vibebrowser/manager/api"
)

// Taps (SPEC §15): for the timeline the shim keeps the code the agent sent (stdin's first api.CallCodeMax
// bytes) and the last api.CallOutputMax bytes of each output stream, passing every byte on as it comes. A
// regular file on stdin (an older shell's heredoc) is read where the CLI will read it, with pread, so the
// CLI still gets it itself, untouched; a pipe or socket on any stream is relayed through a pipe of the
// shim's; a regular file on stdout or stderr (output sent to a file) is handed to the CLI as it is, its
// offset noted, and what the call wrote to it read back afterwards with pread (fileTail); a terminal or
// another device is handed to the CLI as it is and named untold.

// outputGrace is how long the shim waits, after the CLI exited, for the end of its output: a process the
// CLI left behind may keep the stream open, and the shim does not wait for it.
const outputGrace = 100 * time.Millisecond

// taps are one call's taps: stdio is what the CLI gets as its descriptors 0, 1 and 2.
type taps struct {
	stdio           [3]*os.File
	stdin           *headTap
	out             [2]*tailTap
	files           [2]*fileTail
	untold          []string
	closeAfterStart []*os.File // the CLI's ends of the shim's pipes: closed here once it has them
}

// startTaps sets up the taps of the streams in; off hands every stream on as it is.
func startTaps(in [3]*os.File, off bool) *taps {
	t := &taps{stdio: in}
	if off {
		return t
	}
	names := [3]string{"stdin", "stdout", "stderr"}
	for i, f := range in {
		var fi os.FileInfo
		var err error
		if fi, err = f.Stat(); err != nil {
			t.untold = append(t.untold, names[i])
			continue
		}
		relay := fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
		switch {
		case i == 0 && fi.Mode().IsRegular():
			t.stdin = preadHead(f)
		case i > 0 && fi.Mode().IsRegular():
			if t.files[i-1] = startFileTail(f); t.files[i-1] == nil {
				t.untold = append(t.untold, names[i])
			}
		case !relay:
			t.untold = append(t.untold, names[i])
		case i == 0:
			r, w, err := os.Pipe()
			if err != nil {
				t.untold = append(t.untold, names[i])
				continue
			}
			t.stdin = &headTap{done: make(chan struct{})}
			go t.stdin.relay(f, w)
			t.stdio[0], t.closeAfterStart = r, append(t.closeAfterStart, r)
		default:
			r, w, err := os.Pipe()
			if err != nil {
				t.untold = append(t.untold, names[i])
				continue
			}
			tap := &tailTap{r: r, done: make(chan struct{})}
			go tap.relay(r, f)
			t.out[i-1], t.stdio[i], t.closeAfterStart = tap, w, append(t.closeAfterStart, w)
		}
	}
	return t
}

// started closes the shim's copies of the CLI's ends, once the CLI has its own: its output ends when the
// CLI's (and its children's) copies close, and its stdin relay sees the CLI go.
func (t *taps) started() {
	for _, f := range t.closeAfterStart {
		f.Close()
	}
	t.closeAfterStart = nil
}

// finish waits for the output relays to reach the end of their streams and puts what the taps kept into rep.
// A stream still open outputGrace after the CLI exited is kept open by a process the CLI left behind: its
// relay then passes on what the pipe holds (all the CLI itself wrote) and stops, without waiting for more.
func (t *taps) finish(rep *api.CallReport) {
	t.started() // a CLI that never started leaves the pipes to close here

	// The grace's timer is made for the first relay waited on: a call without one needs no timer.
	var deadline <-chan time.Time
	late := false
	names := [2]string{"stdout", "stderr"}
	for i, tap := range t.out {
		if tap == nil {
			continue
		}
		if !late {
			if deadline == nil {
				deadline = time.After(outputGrace)
			}
			select {
			case <-tap.done:
				continue
			case <-deadline:
				late = true
			}
		}
		if !tap.stop() {
			rep.Untold = append(rep.Untold, names[i]+" (kept open by a process the CLI left behind)")
		}
	}
	if t.stdin != nil {
		rep.Code, rep.CodeCut = t.stdin.kept()
	}
	if t.out[0] != nil {
		rep.Stdout, rep.StdoutCut = t.out[0].kept()
	}
	if t.out[1] != nil {
		rep.Stderr, rep.StderrCut = t.out[1].kept()
	}
	for i, ft := range t.files {
		if ft == nil {
			continue
		}
		tail, cut, why := ft.kept()
		switch {
		case why != "":
			rep.Untold = append(rep.Untold, names[i]+" ("+why+")")
		case i == 0:
			rep.Stdout, rep.StdoutCut = tail, cut
		default:
			rep.Stderr, rep.StderrCut = tail, cut
		}
	}
	rep.Untold = append(rep.Untold, t.untold...)
}

// headTap keeps the first api.CallCodeMax bytes of a stream.
type headTap struct {
	mu   sync.Mutex
	head []byte
	cut  bool
	done chan struct{} // closed at the end of the stream (nil: read at once)
}

// preadHead reads a regular file's first api.CallCodeMax bytes from its current offset, leaving the offset
// where it is for the CLI.
func preadHead(f *os.File) *headTap {
	off, err := unix.Seek(int(f.Fd()), 0, io.SeekCurrent)
	if err != nil {
		return nil
	}
	buf := make([]byte, api.CallCodeMax+1)
	n, _ := f.ReadAt(buf, off)
	h := &headTap{head: buf[:min(n, api.CallCodeMax)], cut: n > api.CallCodeMax}
	return h
}

// relay copies from to the CLI's pipe w, keeping the head, and closes w at the end of from. It returns
// when from ends or the CLI stopped reading (its end closed).
func (h *headTap) relay(from *os.File, w *os.File) {
	defer close(h.done)
	defer w.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			h.keep(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (h *headTap) keep(p []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	room := api.CallCodeMax - len(h.head)
	if len(p) > room {
		p, h.cut = p[:room], true
	}
	h.head = append(h.head, p...)
}

// kept is the head read so far (the relay may still run: a stdin the CLI never read to its end).
func (h *headTap) kept() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.head), h.cut
}

// tailTap passes a stream on and keeps its last api.CallOutputMax bytes.
type tailTap struct {
	mu   sync.Mutex
	tail []byte
	cut  bool
	r    *os.File      // the shim's end of the CLI's pipe, read by relay alone
	done chan struct{} // closed when relay returns
	// leftOpen (written by relay before done closes) says the relay stopped at stop's word with the pipe
	// empty but its write end still open somewhere.
	leftOpen bool
}

// relay copies the CLI's pipe r to the shim's own stream to until the pipe's end, or until stop: then it
// passes on what the pipe holds and returns. A write to that fails (the agent closed its end) ends the relay
// too: the CLI then sees its pipe close, as it would have.
func (t *tailTap) relay(r *os.File, to *os.File) {
	defer close(t.done)
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			t.keep(buf[:n])
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.drain(r, to, buf)
			return
		}
		if err != nil {
			return
		}
	}
}

// stop tells relay to stop waiting for more of the stream, and waits until it has passed on what the pipe
// holds: everything the CLI wrote before it exited is there, however far behind the relay was (its goroutine
// not run on a loaded machine, or the agent reading slowly). It reports whether the stream reached its end.
func (t *tailTap) stop() bool {
	// The pipe is the runtime's to poll (os.Pipe), so its read deadline wakes relay's Read at once; a file
	// already closed means relay is returning.
	if err := t.r.SetReadDeadline(time.Now()); errors.Is(err, os.ErrNoDeadline) {
		return false
	}
	<-t.done
	return !t.leftOpen
}

// drain passes on what the pipe r holds now, without waiting for more: it reads the non-blocking descriptor
// itself, since a Read past the deadline is refused before it reads.
func (t *tailTap) drain(r, to *os.File, buf []byte) {
	raw, err := r.SyscallConn()
	if err != nil {
		t.leftOpen = true
		return
	}
	for {
		var n int
		var rerr error
		if err := raw.Control(func(fd uintptr) { n, rerr = unix.Read(int(fd), buf) }); err != nil {
			t.leftOpen = true
			return
		}
		switch {
		case n > 0:
			t.keep(buf[:n])
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		case rerr == unix.EINTR:
		case rerr == nil: // the end: the last writer closed its end after all
			return
		default: // EAGAIN: empty, and a process the CLI left behind still holds the write end
			t.leftOpen = true
			return
		}
	}
}

func (t *tailTap) keep(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tail = append(t.tail, p...)
	if over := len(t.tail) - api.CallOutputMax; over > 0 {
		t.tail, t.cut = append(t.tail[:0], t.tail[over:]...), true
	}
}

func (t *tailTap) kept() (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.tail), t.cut
}

// fileTail is an output stream that is a regular file: the CLI writes to it itself, through the same open
// file (and so the same offset) as the shim's, and the shim reads back what the call wrote, from the
// offset at its start to the offset at its end. It reads through a file of its own (the agent's is often
// write-only), with pread: the agent's offset never moves.
type fileTail struct {
	f     *os.File
	start int64
}

// startFileTail notes where the call's output will start: f's offset, or its end when it appends (>>:
// every write lands at the end, wherever the offset is); nil when it has none (then the stream is untold).
func startFileTail(f *os.File) *fileTail {
	off, err := unix.Seek(int(f.Fd()), 0, io.SeekCurrent)
	if err != nil {
		return nil
	}
	if fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0); err == nil && fl&unix.O_APPEND != 0 {
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) == nil {
			off = max(off, st.Size)
		}
	}
	return &fileTail{f: f, start: off}
}

// kept is the last api.CallOutputMax bytes the call wrote, and whether earlier ones were cut; or why they
// cannot be told: the file was truncated, rewound, deleted or replaced during the call, so what lies past
// the offset at the start is not (all) the call's.
func (t *fileTail) kept() (tail string, cut bool, why string) {
	end, err := unix.Seek(int(t.f.Fd()), 0, io.SeekCurrent)
	if err != nil {
		return "", false, "its offset could not be read"
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(t.f.Fd()), &st); err != nil {
		return "", false, "the file could not be read"
	}
	switch {
	case end < t.start:
		return "", false, "the file was truncated or rewound during the call"
	case st.Size < end:
		return "", false, "the file was truncated during the call"
	case st.Nlink == 0:
		return "", false, "the file was deleted or replaced during the call"
	}
	r, err := reopenForRead(t.f, &st)
	if err != nil {
		return "", false, "the shim could not read it back: " + err.Error()
	}
	defer r.Close()
	// A hole in what the call wrote: the file was cut short and then written past its new end.
	if hole, err := unix.Seek(int(r.Fd()), t.start, unix.SEEK_HOLE); err == nil && hole < end && end > t.start {
		return "", false, "the file was truncated during the call"
	}
	// Or a gap of zeros where the call's output starts: cut short and written past within a block (best
	// effort: a CLI's output does not start with NUL; a cut further on goes unseen).
	if end > t.start {
		var first [1]byte
		if n, _ := r.ReadAt(first[:], t.start); n == 1 && first[0] == 0 {
			return "", false, "the file was truncated during the call"
		}
	}
	from := max(t.start, end-api.CallOutputMax)
	buf := make([]byte, end-from)
	n, err := r.ReadAt(buf, from)
	if err != nil && n < len(buf) {
		return "", false, "the shim could not read it back: " + err.Error()
	}
	return string(buf[:n]), from > t.start, ""
}
