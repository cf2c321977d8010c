package keeper

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"vibebrowser/mux/cdpwire"
)

// The fake Chromium: the test binary run again as "fake-browser ARGS…" (TestMain), speaking the DevTools
// pipe on fds 3 and 4 as Chromium does, one reader and one writer, so a keeper blocked on one side never
// stops the other. Every command it reads is appended to the file of --log=FILE as one line, "method params"
// plus " session=S" for a session's command, so tests see what the keeper sent. Its flags:
//
//	--log=FILE          where the lines go
//	--exit-at-start=N   exit N before reading anything (a browser that dies before it is ready)
//	--stubborn          ignore SIGTERM and Browser.close (the keeper must SIGKILL it)
//
// Its methods, beyond Browser.getVersion and Chrome's Target.attach*/detachFromTarget (with their events):
//
//	Test.echo {…}                      → {"size": bytes of the command as read}
//	Test.slow {"ms":N}|{"until":"K"}   → answered after N ms, or when Test.release {"key":"K"} comes
//	Test.big {"size":N}                → an answer of about N bytes
//	Test.events {"count":N,"size":M}   → N events Test.event of about M bytes, then the answer
//	Test.emit {"event":{…}}            → the event, then the answer
//	Test.arm {"on":"M","event":{…}}    → when command M next comes, the event is written before its answer
//	Test.spawn                         → a helper process in the fake's group: {"pid":P}
//	Test.exit {"code":N}               → exit N; Test.signal {"signal":N} → kill itself with N
//
// Anything else is answered {"id":N,"result":{}} (with its sessionId). The fake exits 0 at EOF on fd 3,
// after writing "EOF" to its log.

const (
	roleFake   = "fake-browser"
	roleKeep   = "keep"
	roleHelper = "fake-helper"
)

type fakeCmd struct {
	ID        int64           `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

// fakeOut is one thing for the fake's writer: a message, or an exit once everything before it is written.
type fakeOut struct {
	msg  []byte
	exit func()
}

type fake struct {
	out      chan fakeOut // sized so the reader never waits on the writer in any test
	logf     *os.File
	stubborn bool
	sessions int

	mu sync.Mutex
	// mu guards the fields below.
	held  map[string][]fakeOut // answers waiting for Test.release
	armed map[string][]json.RawMessage
}

func fakeBrowser(args []string) int {
	f := &fake{out: make(chan fakeOut, 1<<16), held: map[string][]fakeOut{}, armed: map[string][]json.RawMessage{}}
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--log="):
			lf, err := os.OpenFile(strings.TrimPrefix(a, "--log="), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				fmt.Fprintln(os.Stderr, "fake browser:", err)
				return 70
			}
			f.logf = lf
		case strings.HasPrefix(a, "--exit-at-start="):
			n, _ := strconv.Atoi(strings.TrimPrefix(a, "--exit-at-start="))
			return n
		case a == "--stubborn":
			f.stubborn = true
			signal.Ignore(syscall.SIGTERM)
		}
	}
	// Chromium's helpers do not hold the pipe; the fake's must not either.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	in, out := os.NewFile(3, "devtools-in"), os.NewFile(4, "devtools-out")
	go f.writeLoop(out)
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		msg, _, err := cdpwire.ReadMessage(br, 1<<30)
		if err != nil {
			f.record("EOF")
			return 0
		}
		var c fakeCmd
		if err := json.Unmarshal(msg, &c); err != nil {
			f.record("BAD " + string(msg))
			continue
		}
		line := c.Method + " " + string(c.Params)
		if c.SessionID != "" {
			line += " session=" + c.SessionID
		}
		f.record(line)
		f.handle(c, len(msg))
	}
}

func (f *fake) record(line string) {
	if f.logf != nil {
		f.logf.WriteString(line + "\n") // O_APPEND: one write, one line
	}
}

func (f *fake) writeLoop(w *os.File) {
	bw := bufio.NewWriterSize(w, 64<<10)
	for o := range f.out {
		if o.exit != nil {
			bw.Flush()
			o.exit()
			continue
		}
		cdpwire.WriteMessage(bw, o.msg)
		if len(f.out) == 0 {
			bw.Flush()
		}
	}
}

func (f *fake) send(msg []byte) { f.out <- fakeOut{msg: msg} }

func (f *fake) answer(c fakeCmd, result any) []byte {
	a := map[string]any{"id": c.ID, "result": result}
	if c.SessionID != "" {
		a["sessionId"] = c.SessionID
	}
	b, _ := json.Marshal(a)
	return b
}

func (f *fake) event(method string, params any, sessionID string) []byte {
	e := map[string]any{"method": method, "params": params}
	if sessionID != "" {
		e["sessionId"] = sessionID
	}
	b, _ := json.Marshal(e)
	return b
}

func (f *fake) handle(c fakeCmd, size int) {
	var p struct {
		TargetID  string          `json:"targetId"`
		SessionID string          `json:"sessionId"`
		MS        int             `json:"ms"`
		Until     string          `json:"until"`
		Key       string          `json:"key"`
		Size      int             `json:"size"`
		Count     int             `json:"count"`
		Code      int             `json:"code"`
		Signal    int             `json:"signal"`
		On        string          `json:"on"`
		Event     json.RawMessage `json:"event"`
	}
	json.Unmarshal(c.Params, &p)
	f.mu.Lock()
	armed := f.armed[c.Method]
	delete(f.armed, c.Method)
	f.mu.Unlock()
	for _, e := range armed {
		f.send(e)
	}
	switch c.Method {
	case "Browser.getVersion":
		f.send(f.answer(c, map[string]string{"protocolVersion": "1.3", "product": "FakeChrome/1.0"}))
	case "Browser.close":
		f.send(f.answer(c, struct{}{}))
		if !f.stubborn {
			f.out <- fakeOut{exit: func() { os.Exit(0) }}
		}
	case "Target.attachToTarget", "Target.attachToBrowserTarget":
		f.sessions++
		s := fmt.Sprintf("S%d", f.sessions)
		info := map[string]any{"targetId": p.TargetID, "type": "page"}
		f.send(f.event("Target.attachedToTarget", map[string]any{"sessionId": s, "targetInfo": info, "waitingForDebugger": false}, c.SessionID))
		f.send(f.answer(c, map[string]string{"sessionId": s}))
	case "Target.detachFromTarget":
		f.send(f.event("Target.detachedFromTarget", map[string]string{"sessionId": p.SessionID}, c.SessionID))
		f.send(f.answer(c, struct{}{}))
	case "Test.echo":
		f.send(f.answer(c, map[string]int{"size": size}))
	case "Test.slow":
		a := f.answer(c, struct{}{})
		if p.Until != "" {
			f.mu.Lock()
			f.held[p.Until] = append(f.held[p.Until], fakeOut{msg: a})
			f.mu.Unlock()
			return
		}
		time.AfterFunc(time.Duration(p.MS)*time.Millisecond, func() { f.send(a) })
	case "Test.release":
		f.mu.Lock()
		held := f.held[p.Key]
		delete(f.held, p.Key)
		f.mu.Unlock()
		for _, o := range held {
			f.out <- o
		}
		f.send(f.answer(c, struct{}{}))
	case "Test.big":
		f.send(f.answer(c, map[string]string{"data": strings.Repeat("b", p.Size)}))
	case "Test.events":
		pad := strings.Repeat("e", p.Size)
		for i := range p.Count {
			f.send(f.event("Test.event", map[string]any{"n": i, "pad": pad}, ""))
		}
		f.send(f.answer(c, struct{}{}))
	case "Test.emit":
		f.send(p.Event)
		f.send(f.answer(c, struct{}{}))
	case "Test.arm":
		f.mu.Lock()
		f.armed[p.On] = append(f.armed[p.On], p.Event)
		f.mu.Unlock()
		f.send(f.answer(c, struct{}{}))
	case "Test.spawn":
		self, _ := os.Executable()
		h := exec.Command(self, roleHelper)
		if err := h.Start(); err != nil {
			f.send(f.answer(c, map[string]string{"error": err.Error()}))
			return
		}
		f.send(f.answer(c, map[string]int{"pid": h.Process.Pid}))
	case "Test.exit":
		f.out <- fakeOut{exit: func() { os.Exit(p.Code) }}
	case "Test.signal":
		f.out <- fakeOut{exit: func() {
			signal.Reset(syscall.Signal(p.Signal))
			syscall.Kill(os.Getpid(), syscall.Signal(p.Signal))
			time.Sleep(time.Minute) // the signal ends the process first
		}}
	default:
		f.send(f.answer(c, struct{}{}))
	}
}
