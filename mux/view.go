package mux

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"
)

// A View is the operator watching one page live (Page.startScreencast on its own operator session) and,
// where the UI allows it, driving it: input, navigation, history. Frames are acknowledged only when the
// viewer takes one, so a slow viewer slows the screencast down instead of building a backlog.
//
// Pacing (MaxFPS). Chrome's screencast captures the page at its own rate (about 30 frames a second) while
// the page changes, whether frames are acknowledged or not, and that capture is most of what a viewer costs
// the agents sharing the machine: measured on the bench, the same at 1, 3 or 10 frames a second taken, and
// at 320 or 1024 pixels wide. So a paced view does not hold acknowledgements back: when a frame comes
// sooner than the viewer may take it, the page is busy, and the view stops the screencast until the next
// frame is due, then starts it again, which captures one fresh frame. A page that stays still keeps its
// screencast on, which costs nothing until it changes; a restart's frame equal to the one before says so.

// ViewOptions configures a View's screencast. Zero values are Chrome's defaults, except Quality (60).
type ViewOptions struct {
	// Quality is the JPEG quality, 1-100.
	Quality int
	// MaxWidth and MaxHeight bound the frame size in device pixels (Chrome scales the frame down).
	MaxWidth, MaxHeight int
	// EveryNthFrame sends one compositor frame in n.
	EveryNthFrame int
	// MaxFPS bounds the frame rate (0: as fast as the viewer takes frames): Next hands out a frame no
	// sooner than 1/MaxFPS after the previous one, and the screencast of a busy page is stopped between
	// them (see Pacing above). Chrome captures on the machine the agents share, so a viewer that needs no
	// more should say so.
	MaxFPS int
}

// Frame is one screencast frame.
type Frame struct {
	// JPEG is the image.
	JPEG []byte
	// DeviceWidth and DeviceHeight are the page's viewport in CSS pixels: input coordinates are in that
	// space (scale a click on the image by DeviceWidth/imageWidth).
	DeviceWidth, DeviceHeight float64
	// OffsetTop, PageScaleFactor and ScrollOffsetX/Y are Chrome's frame metadata.
	OffsetTop, PageScaleFactor, ScrollOffsetX, ScrollOffsetY float64
	// Timestamp is when Chrome swapped the frame (zero if it did not say).
	Timestamp time.Time
	// Navigations counts the page's navigations the view had seen when it handed out this frame (a new
	// document, or a same-document one: a fragment, history.pushState): a change says its URL and title
	// may have changed.
	Navigations int
}

// View is a live view of one page: Next takes frames, the input methods drive the page, Close (or the end
// of the context View was given) stops the screencast and lets go of the page. A View is safe for
// concurrent use; frames are meant for one reader.
type View struct {
	m      *Mux
	target string
	ready  chan struct{} // capacity 1: "a frame is waiting"; the frame itself is in next
	done   chan struct{} // closed when the view ends

	// Guarded by Mux.mu.
	sess    *opSession
	human   *client // the human client this view keeps connected, if it watches a human tab
	ended   bool
	err     error
	stop    func() bool // the context.AfterFunc that closes the view
	params  []byte      // the screencast's parameters, for restarts
	gap     time.Duration
	due     time.Time     // the earliest time Next may hand out the next frame (MaxFPS)
	casting bool          // the screencast is on (a paced view stops it between frames of a busy page)
	fresh   bool          // the screencast was started again and its first frame has not come yet
	last    []byte        // the newest frame's event, to tell a still page from a busy one
	castT   *time.Timer   // the pending restart
	quietT  *time.Timer   // nudges a screencast that has sent nothing new for a while (nudgeQuietLocked)
	lastAt  time.Time     // when the newest frame that showed a change came (or the last nudge)
	quiet   time.Duration // how long to wait for a change before the next nudge: quietNudge, doubling to quietMax
	lastImg []byte        // the newest frame's image, to tell a change from the same picture again
	dropped []int         // the screencast sessions of the frames replaced before the viewer took one: acked with the next
	navs    int           // the main frame's navigations seen (Frame.Navigations)

	mu sync.Mutex
	// mu guards the field below; taken under Mux.mu by the upstream reader, never the other way round.
	next []byte // the newest frame's raw event, not taken yet: a newer one replaces it
}

// View starts watching a page. ctx bounds the view's whole life: when it ends the view closes, as by
// Close. While a view of a human tab is open, the human client counts as connected (its tabs are kept).
// Watching changes nothing the tab's owner can observe: no activation, focus, viewport or emulation.
func (o *Operator) View(ctx context.Context, targetID string, opt ViewOptions) (*View, error) {
	m := o.m
	p := map[string]any{"format": "jpeg", "quality": opt.Quality}
	if opt.Quality <= 0 || opt.Quality > 100 {
		p["quality"] = 60
	}
	if opt.MaxWidth > 0 {
		p["maxWidth"] = opt.MaxWidth
	}
	if opt.MaxHeight > 0 {
		p["maxHeight"] = opt.MaxHeight
	}
	if opt.EveryNthFrame > 0 {
		p["everyNthFrame"] = opt.EveryNthFrame
	}
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	v := &View{m: m, target: targetID, ready: make(chan struct{}, 1), done: make(chan struct{}), params: params, casting: true}
	if opt.MaxFPS > 0 {
		v.gap = time.Second / time.Duration(opt.MaxFPS)
	}
	s, err := o.attach(ctx, targetID, v)
	if err != nil {
		return nil, err
	}
	// Page events on this session only (no effect on the page or its owner's sessions): navigations
	// say when a hidden tab needs rendering again (nudgeLocked).
	if _, err := o.call(ctx, "Page.enable", nil, s.id); err != nil {
		v.Close()
		return nil, err
	}
	if _, err := o.call(ctx, "Page.startScreencast", json.RawMessage(params), s.id); err != nil {
		v.Close()
		return nil, err
	}
	m.mu.Lock()
	if !v.ended {
		v.stop = context.AfterFunc(ctx, func() { v.Close() })
		v.nudgeLocked()
		v.lastAt, v.quiet = time.Now(), quietNudge
		v.quietT = time.AfterFunc(quietNudge, func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			v.nudgeQuietLocked()
		})
	}
	m.mu.Unlock()
	return v, nil
}

// Target returns the id of the watched page.
func (v *View) Target() string { return v.target }

// Done is closed when the view ends: Close, the end of its context, the tab closing or the browser
// connection going.
func (v *View) Done() <-chan struct{} { return v.done }

// Err returns why the view ended (ErrViewClosed, ErrTargetClosed, ErrDisconnected), nil while it lives.
func (v *View) Err() error {
	v.m.mu.Lock()
	defer v.m.mu.Unlock()
	return v.err
}

// startLocked counts a view whose session is attached.
func (v *View) startLocked(s *opSession) {
	m := v.m
	v.sess = s
	m.op.views++
	if cl := s.target.owner; cl != nil && cl.id == HumanClient {
		v.human = cl
		cl.viewers++
		if cl.grace != nil { // the human client is "connected" again: its grace period stops
			cl.grace.Stop()
			cl.grace = nil
			cl.graceGen++
		}
	}
}

// endLocked ends the view once: uncounted, and the human client's grace period starts after its last
// viewer.
func (v *View) endLocked(err error) {
	if v.ended {
		return
	}
	m := v.m
	v.ended, v.err = true, err
	m.op.views--
	m.taps.personPw.settleLocked(v)
	v.unholdLocked()
	if v.castT != nil {
		v.castT.Stop()
	}
	if v.quietT != nil {
		v.quietT.Stop()
	}
	if cl := v.human; cl != nil {
		cl.viewers--
		if cl.viewers == 0 && !m.closed && m.clients[cl.id] == cl {
			m.startGraceLocked(cl)
		}
	}
	v.mu.Lock()
	v.next = nil
	v.mu.Unlock()
	close(v.done)
}

// nudgeLocked makes Chrome render a hidden tab (an agent's background tab composites nothing, so its
// screencast starts with no frame and stops at each new document): a capture renders it once, and the
// screencast sends that frame. The capture's answer is not needed.
func (v *View) nudgeLocked() {
	v.m.sendInternalLocked("Page.captureScreenshot", []byte(`{"format":"jpeg","quality":1}`), v.sess.id, nil)
}

// quietNudge is how long a casting view waits for a changed frame before it nudges the page again: a hidden
// tab composites only when something asks it to, so a change the page makes on its own (a script, an
// agent's Runtime.evaluate) reaches the view within about this long. Each nudge that shows nothing new
// doubles the wait, up to quietMax, so a page that stays still costs a capture every few seconds at most; a
// change brings it back to quietNudge.
const (
	quietNudge = time.Second
	quietMax   = 4 * time.Second
)

// nudgeQuietLocked nudges the page when its screencast is on and has shown no change for v.quiet, and
// looks again later.
func (v *View) nudgeQuietLocked() {
	if v.ended {
		return
	}
	if wait := v.quiet - time.Since(v.lastAt); wait > 0 {
		v.quietT.Reset(wait)
		return
	}
	if v.casting {
		v.nudgeLocked()
	}
	v.lastAt, v.quiet = time.Now(), min(2*v.quiet, quietMax)
	v.quietT.Reset(v.quiet)
}

// eventLocked takes an event of the view's session from the upstream reader.
func (v *View) eventLocked(method string, b []byte) {
	switch method {
	case "Page.screencastFrame":
		v.offerLocked(b)
	case "Page.loadEventFired", "Page.domContentEventFired":
		v.nudgeLocked()
	case "Page.frameNavigated":
		if !bytes.Contains(b, []byte(`"parentId"`)) { // the main frame: a new document to render
			v.navs++
			v.nudgeLocked()
		}
	case "Page.navigatedWithinDocument":
		var ev struct {
			Params struct {
				FrameID string `json:"frameId"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &ev) == nil && ev.Params.FrameID == v.target { // the main frame's id is its page's
			v.navs++
		}
	}
}

// offerLocked hands the view a frame event from the upstream reader: the newest replaces one not taken.
// The reader only swaps a slice here; decoding and the acks are the viewer's work, in Next. Chrome counts
// a screencast's unacknowledged frames, not which ones, and sends nothing more while two are in flight:
// that is what makes a slow viewer slow the screencast down, and also why a replaced frame must be
// acknowledged too (when the viewer takes the newest), or two of them would stop the view for good.
func (v *View) offerLocked(b []byte) {
	v.mu.Lock()
	replaced := v.next
	v.next = b
	v.mu.Unlock()
	if img := frameImage(b); !bytes.Equal(img, v.lastImg) {
		v.lastImg, v.lastAt, v.quiet = img, time.Now(), quietNudge
	}
	if replaced != nil && v.casting && len(v.dropped) < maxDropped {
		v.dropped = append(v.dropped, frameSession(replaced))
	}
	select {
	case v.ready <- struct{}{}:
	default:
	}
	if v.gap > 0 && v.casting {
		v.paceLocked(b)
	}
}

// maxDropped bounds the replaced frames a view remembers to acknowledge: Chrome has at most two in flight,
// so more are from screencasts that have ended.
const maxDropped = 8

// restartLead is how long before a frame is due a stopped screencast starts again: about the time Chrome
// takes to capture and send the first frame of a screencast (20–25 ms measured here).
const restartLead = 25 * time.Millisecond

// paceLocked stops the screencast of a busy page after a frame (see Pacing): one that came before the
// viewer may take it, or a restart's first frame that differs from the one before. Next starts it again.
func (v *View) paceLocked(b []byte) {
	fresh, last := v.fresh, v.last
	v.fresh, v.last = false, b
	if fresh && bytes.Equal(frameImage(b), frameImage(last)) || !fresh && !time.Now().Before(v.due) {
		return
	}
	v.m.sendInternalLocked("Page.stopScreencast", nil, v.sess.id, nil)
	v.casting = false
}

// restartLocked starts the stopped screencast of a paced view again.
func (v *View) restartLocked() {
	v.castT = nil
	if v.ended || v.casting {
		return
	}
	v.m.sendInternalLocked("Page.startScreencast", v.params, v.sess.id, nil)
	v.casting, v.fresh = true, true
	v.dropped = v.dropped[:0] // a new screencast counts its frames afresh
}

// ackLocked acknowledges a frame of the screencast whose frames carry sessionID.
func (v *View) ackLocked(sessionID int) {
	v.m.sendInternalLocked("Page.screencastFrameAck", []byte(fmt.Sprintf(`{"sessionId":%d}`, sessionID)), v.sess.id, nil)
}

// frameSession returns the screencast session id of a Page.screencastFrame event (params.sessionId, a
// number, unlike the message's own session id), without decoding the event; 0 if it has none.
func frameSession(b []byte) int {
	const key = `"sessionId":`
	for i := bytes.Index(b, []byte(key)); i >= 0; {
		rest := b[i+len(key):]
		n, digits := 0, 0
		for _, c := range rest {
			if c < '0' || c > '9' {
				break
			}
			n, digits = n*10+int(c-'0'), digits+1
		}
		if digits > 0 {
			return n
		}
		j := bytes.Index(rest, []byte(key))
		if j < 0 {
			break
		}
		i += len(key) + j
	}
	return 0
}

// frameImage returns the base64 image of a Page.screencastFrame event, without decoding the event.
func frameImage(b []byte) []byte {
	const key = `"data":"`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return nil
	}
	img := b[i+len(key):]
	if j := bytes.IndexByte(img, '"'); j >= 0 {
		return img[:j]
	}
	return nil
}

// Next waits for the next frame and takes it; taking it acknowledges it, which lets Chrome send the next.
// With MaxFPS it waits until 1/MaxFPS after the previous frame and takes the newest. It returns the view's
// error once the view has ended, or ctx's.
func (v *View) Next(ctx context.Context) (Frame, error) {
	for {
		select {
		case <-v.done:
			return Frame{}, v.Err()
		default:
		}
		v.m.mu.Lock()
		wait := time.Until(v.due)
		v.m.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-v.done:
				t.Stop()
				return Frame{}, v.Err()
			case <-ctx.Done():
				t.Stop()
				return Frame{}, ctx.Err()
			}
		}
		v.mu.Lock()
		b := v.next
		v.next = nil
		v.mu.Unlock()
		if b != nil {
			return v.take(b)
		}
		select {
		case <-v.ready:
		case <-v.done:
			return Frame{}, v.Err()
		case <-ctx.Done():
			return Frame{}, ctx.Err()
		}
	}
}

func (v *View) take(b []byte) (Frame, error) {
	var ev struct {
		Params struct {
			Data     []byte `json:"data"`
			Metadata struct {
				OffsetTop       float64 `json:"offsetTop"`
				PageScaleFactor float64 `json:"pageScaleFactor"`
				DeviceWidth     float64 `json:"deviceWidth"`
				DeviceHeight    float64 `json:"deviceHeight"`
				ScrollOffsetX   float64 `json:"scrollOffsetX"`
				ScrollOffsetY   float64 `json:"scrollOffsetY"`
				Timestamp       float64 `json:"timestamp"`
			} `json:"metadata"`
			SessionID int `json:"sessionId"`
		} `json:"params"`
	}
	err := json.Unmarshal(b, &ev)
	m := v.m
	m.mu.Lock()
	navs := v.navs
	if !v.ended {
		v.due = time.Now().Add(v.gap)
		switch {
		case v.casting:
			v.ackLocked(ev.Params.SessionID) // even when unreadable, or Chrome would stop sending frames
			for _, id := range v.dropped {
				v.ackLocked(id)
			}
			v.dropped = v.dropped[:0]
		case v.castT == nil:
			v.castT = time.AfterFunc(max(0, v.gap-min(restartLead, v.gap/2)), func() {
				m.mu.Lock()
				v.restartLocked()
				m.mu.Unlock()
			})
		}
	}
	m.mu.Unlock()
	if err != nil {
		return Frame{}, fmt.Errorf("mux: Page.screencastFrame: %w", err)
	}
	md := ev.Params.Metadata
	f := Frame{JPEG: ev.Params.Data, DeviceWidth: md.DeviceWidth, DeviceHeight: md.DeviceHeight, OffsetTop: md.OffsetTop,
		PageScaleFactor: md.PageScaleFactor, ScrollOffsetX: md.ScrollOffsetX, ScrollOffsetY: md.ScrollOffsetY, Navigations: navs}
	if md.Timestamp > 0 {
		sec, frac := math.Modf(md.Timestamp)
		f.Timestamp = time.Unix(int64(sec), int64(frac*1e9))
	}
	return f, nil
}

// Close stops the screencast and detaches the view's session. It never waits on the browser and may be
// called more than once.
func (v *View) Close() error {
	m := v.m
	m.mu.Lock()
	if !v.ended {
		if s := v.sess; s != nil && m.op.sessions[s.id] == s {
			m.sendInternalLocked("Page.stopScreencast", nil, s.id, nil)
			m.op.detachLocked(m.op.browser, s.id)
		}
		v.endLocked(ErrViewClosed)
	}
	stop := v.stop
	v.stop = nil
	m.mu.Unlock()
	if stop != nil {
		stop()
	}
	return nil
}

// call sends a command on the view's session.
func (v *View) call(ctx context.Context, method string, params any) ([]byte, error) {
	m := v.m
	m.mu.Lock()
	ended, err, s := v.ended, v.err, v.sess
	m.mu.Unlock()
	if ended {
		return nil, err
	}
	return m.op.call(ctx, method, params, s.id)
}

// Modifier bits of MouseEvent.Modifiers and KeyEvent.Modifiers (CDP's).
const (
	ModAlt   = 1
	ModCtrl  = 2
	ModMeta  = 4
	ModShift = 8
)

// MouseEvent is one pointer event, in CSS pixels of the page (Frame.DeviceWidth/Height).
type MouseEvent struct {
	// Type is "mousePressed", "mouseReleased", "mouseMoved" or "mouseWheel".
	Type string
	X, Y float64
	// Button is "none", "left", "middle", "right", "back" or "forward" ("" is "none").
	Button string
	// Buttons is the pressed buttons as a bit field (left 1, right 2, middle 4, back 8, forward 16).
	Buttons int
	// ClickCount is 1 for a click, 2 for a double click (press and release both carry it).
	ClickCount int
	// DeltaX and DeltaY scroll, for "mouseWheel".
	DeltaX, DeltaY float64
	Modifiers      int
}

// Mouse dispatches a pointer event (Input.dispatchMouseEvent).
func (v *View) Mouse(ctx context.Context, e MouseEvent) error {
	if e.Button == "" {
		e.Button = "none"
	}
	p := map[string]any{"type": e.Type, "x": e.X, "y": e.Y, "button": e.Button, "buttons": e.Buttons,
		"clickCount": e.ClickCount, "modifiers": e.Modifiers}
	if e.Type == "mouseWheel" {
		p["deltaX"], p["deltaY"] = e.DeltaX, e.DeltaY
	}
	_, err := v.call(ctx, "Input.dispatchMouseEvent", p)
	return err
}

// KeyEvent is one key event, as a browser's KeyboardEvent describes it.
type KeyEvent struct {
	// Type is "keyDown", "keyUp", "rawKeyDown" or "char".
	Type string
	// Key and Code are KeyboardEvent.key and .code ("a", "KeyA"; "Enter", "Enter").
	Key, Code string
	// Text is what a keyDown types ("" for keys that type nothing).
	Text string
	// Modifiers are the Mod* bits.
	Modifiers int
	// WindowsVirtualKeyCode is KeyboardEvent.keyCode (13 for Enter): Chrome needs it for keys like
	// Enter, Backspace and the arrows to do anything.
	WindowsVirtualKeyCode int
}

// Key dispatches a key event (Input.dispatchKeyEvent).
func (v *View) Key(ctx context.Context, e KeyEvent) error {
	p := map[string]any{"type": e.Type, "key": e.Key, "code": e.Code, "modifiers": e.Modifiers}
	if e.Text != "" {
		p["text"], p["unmodifiedText"] = e.Text, e.Text
	}
	if e.WindowsVirtualKeyCode != 0 {
		p["windowsVirtualKeyCode"], p["nativeVirtualKeyCode"] = e.WindowsVirtualKeyCode, e.WindowsVirtualKeyCode
	}
	_, err := v.call(ctx, "Input.dispatchKeyEvent", p)
	if err == nil && (e.Type == "keyDown" || e.Type == "rawKeyDown") {
		v.notePersonInput(ctx, "")
	}
	return err
}

// InsertText types text at the focus as one input, like a paste or an IME (Input.insertText).
func (v *View) InsertText(ctx context.Context, text string) error {
	_, err := v.call(ctx, "Input.insertText", map[string]any{"text": text})
	if err == nil {
		v.notePersonInput(ctx, text)
	}
	return err
}

// Navigate loads url in the page (Page.navigate); a navigation Chrome refuses (a bad URL, a network
// error) is an error. An agent's tab opens only what its agent could open (the URL rule, weburl.go): a
// browser page left in it would be the agent's the moment the person lets go. Human tabs open anything.
func (v *View) Navigate(ctx context.Context, url string) error {
	v.m.mu.Lock()
	human := v.human != nil
	v.m.mu.Unlock()
	if !human && !webURL(url) {
		return fmt.Errorf("mux: %s is not opened in an agent's tab (%s); open it in a human tab instead", url, urlRule)
	}
	res, err := v.call(ctx, "Page.navigate", map[string]any{"url": url})
	if err != nil {
		return err
	}
	var r struct {
		ErrorText string `json:"errorText"`
	}
	if json.Unmarshal(res, &r) == nil && r.ErrorText != "" {
		return fmt.Errorf("mux: navigate to %s: %s", url, r.ErrorText)
	}
	return nil
}

// Reload reloads the page.
func (v *View) Reload(ctx context.Context) error {
	_, err := v.call(ctx, "Page.reload", map[string]any{})
	return err
}

// Back goes one entry back in the page's history; at the first entry it does nothing.
func (v *View) Back(ctx context.Context) error { return v.history(ctx, -1) }

// Forward goes one entry forward in the page's history; at the last entry it does nothing.
func (v *View) Forward(ctx context.Context) error { return v.history(ctx, +1) }

func (v *View) history(ctx context.Context, step int) error {
	res, err := v.call(ctx, "Page.getNavigationHistory", nil)
	if err != nil {
		return err
	}
	var h struct {
		CurrentIndex int `json:"currentIndex"`
		Entries      []struct {
			ID int `json:"id"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(res, &h); err != nil {
		return fmt.Errorf("mux: Page.getNavigationHistory: %w", err)
	}
	i := h.CurrentIndex + step
	if i < 0 || i >= len(h.Entries) {
		return nil
	}
	_, err = v.call(ctx, "Page.navigateToHistoryEntry", map[string]any{"entryId": h.Entries[i].ID})
	return err
}
