package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/mux"
)

// The tab page's live view: one WebSocket per page. The server sends each frame as a binary JPEG
// message, preceded by a JSON text message whenever the metadata (size, URL, title, who controls the tab)
// changed; the page sends input as JSON text messages, which a human tab accepts, and an agent's tab only
// while this viewer has taken it over ("hold" / "release").

// LiveView is what a live view asks of Chrome's screencast, at most: a viewer costs the agents that share the
// browser Chrome's captures, on their cores (MaxFPS is what bounds them: see mux.View's pacing), so SPEC §8's
// budget for a person watching (≤ 10% of the agents' throughput, ≤ 1.25× their p99) decides it; `task bench`
// measures it with these options. A viewer narrower than MaxWidth asks for its own width.
var LiveView = mux.ViewOptions{MaxFPS: 10, MaxWidth: 1024, Quality: 50}

const (
	writeWait    = 10 * time.Second
	inputWait    = 5 * time.Second
	maxInputSize = 64 << 10 // a paste of 64 KiB is plenty; more is a broken page
)

// tabPage is the tab page's data.
type tabPage struct {
	Slug, StoreName, ID, Title, URL, Owner, Label string
	Host                                          string // the cluster host whose browser it is ("" on a single host)
	Human                                         bool
	Hold                                          string // "you", "other" or "" (viewMeta.Hold)
	StoreHref, Socket, Close                      string
	NewTab                                        string // the store's form that opens a human tab
	TaskHref                                      string // the task page of a task's or worker slot's tab
	Token                                         string // the viewer's form token (formToken), for Close tab
}

func (s *Server) handleTab(w http.ResponseWriter, r *http.Request) {
	slug, id := r.PathValue("slug"), r.PathValue("id")
	br, ok := s.browser(w, r, slug)
	if !ok {
		return
	}
	t, ok := findTab(br, id)
	back := storeHref(slug)
	if !ok {
		s.message(w, r, http.StatusNotFound, "This tab is gone",
			"The browser of "+quote(slug)+" has no tab of this address: it was closed, or the browser restarted.",
			"Go back to the store page for the tabs it has now.", back)
		return
	}
	name, host, tasks, cluster := slug, "", map[string]bool{}, false
	if st, err := s.cfg.Source.Status(r.Context()); err == nil {
		if b, store, ok := browserOf(st, slug); ok {
			name, host = store.Name, b.Host
		}
		for _, task := range st.Tasks {
			tasks[task.ID] = true
		}
		cluster = st.Host != ""
	}
	kind, label := clientKindIn(t.Owner, tasks, cluster)
	if kind == "task" {
		label = strings.Replace(label, "task", "task "+t.Owner, 1)
	}
	taskPage := ""
	switch kind {
	case "task":
		taskPage = taskHref(t.Owner)
	case "worker":
		taskPage = taskHref(workerSlot.FindStringSubmatch(t.Owner)[1])
	}
	href := tabHref(slug, id)
	s.render(w, r, http.StatusOK, "tab", tabPage{Slug: slug, StoreName: name, Host: host, ID: id, Title: t.Title, URL: t.URL,
		Owner: t.Owner, Label: label, Human: t.Human, Hold: holdState(t.HeldBy, viewerID(r)),
		StoreHref: back, Socket: href + "/ws", Close: href + "/close", NewTab: back + "/tabs", Token: s.formToken(r),
		TaskHref: taskPage})
}

func (s *Server) handleCloseTab(w http.ResponseWriter, r *http.Request) {
	slug, id := r.PathValue("slug"), r.PathValue("id")
	br, ok := s.browser(w, r, slug)
	if !ok {
		return
	}
	back := storeHref(slug)
	if err := br.CloseHumanTab(id); err != nil {
		s.remember(r, noticeCloseTab, "The tab was not closed: "+err.Error())
		s.redirect(w, r, back+noticeURL(noticeCloseTab))
		return
	}
	s.redirect(w, r, back)
}

// metaEvery is how often the live view asks the browser for the tab's URL and title, besides on navigation
// (a variable for the tests only).
var metaEvery = time.Second

// upgrader checks no Origin itself: guard already refused every upgrade without our own.
var upgrader = websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 64 << 10,
	CheckOrigin: func(*http.Request) bool { return true }}

// viewMeta is the JSON text message about the frames that follow.
type viewMeta struct {
	Type   string  `json:"type"` // "meta"
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	URL    string  `json:"url"`
	Title  string  `json:"title"`
	Hold   string  `json:"hold"` // who controls an agent's tab: "you", "other" (another viewer) or ""
}

// holdState says who holds a tab, as viewer sees it.
func holdState(heldBy, viewer string) string {
	switch {
	case heldBy == "":
		return ""
	case heldBy == viewer:
		return "you"
	}
	return "other"
}

// viewNote is a JSON text message for the person: an input refused or failed, or the view's end.
type viewNote struct {
	Type string `json:"type"` // "error" (the view goes on) or "end" (it is over); "refresh" is the reader's
	// word to the writer to send the metadata now (a hold changed), never sent as such
	Message string `json:"message"`
}

// input is one message of the page: pointer, wheel, key, text, navigate, back, forward, reload, hold or
// release.
type input struct {
	Type    string  `json:"type"`
	Event   string  `json:"event"` // mouse: down, up, move; key: down, up
	X       float64 `json:"x"`     // in the frame's CSS pixels (viewMeta.Width/Height)
	Y       float64 `json:"y"`
	Button  string  `json:"button"`
	Buttons int     `json:"buttons"`
	Clicks  int     `json:"clicks"`
	DX      float64 `json:"dx"`
	DY      float64 `json:"dy"`
	Mods    int     `json:"mods"`
	Key     string  `json:"key"`
	Code    string  `json:"code"`
	KeyCode int     `json:"keyCode"`
	Text    string  `json:"text"`
	URL     string  `json:"url"`
}

// handleTabSocket is the live view's WebSocket: one reader (input) and one writer (frames, metadata
// and notes), as gorilla/websocket allows; the View lives exactly as long as the socket.
func (s *Server) handleTabSocket(w http.ResponseWriter, r *http.Request) {
	slug, id := r.PathValue("slug"), r.PathValue("id")
	br, err := s.cfg.Source.Browser(r.Context(), slug)
	if err != nil {
		s.plain(w, http.StatusConflict, "no live view: "+err.Error())
		return
	}
	tab, ok := findTab(br, id)
	if !ok {
		s.plain(w, http.StatusNotFound, "no live view: the browser has no such page tab (it was closed)")
		return
	}
	opt := LiveView
	if n, err := strconv.Atoi(r.URL.Query().Get("w")); err == nil && n >= 100 && n < opt.MaxWidth {
		opt.MaxWidth = n
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the request already
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	view, err := br.View(ctx, id, opt)
	if err != nil {
		_ = conn.WriteJSON(viewNote{Type: "end", Message: "The live view could not start: " + err.Error()})
		return
	}
	defer view.Close()
	holder := viewerID(r)
	if tab.HeldBy != "" && tab.HeldBy == holder {
		_ = view.Hold(holder) // this viewer's page reconnecting: its takeover goes on
	}

	// notes carries what the reader tells the person to the writer. Sized for a burst of refused
	// input; when it is full the person is typing into a tab that refuses everything, and dropping the
	// extra notes loses nothing.
	notes := make(chan viewNote, 8)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer cancel()
		s.readInput(ctx, conn, view, tab, holder, notes)
	}()
	s.writeView(ctx, conn, br, view, id, holder, notes)
	cancel()
	_ = conn.Close() // ends the reader's ReadMessage
	<-readDone
}

// readInput reads the page's input messages until the socket ends.
func (s *Server) readInput(ctx context.Context, conn *websocket.Conn, view View, tab mux.TabInfo, holder string, notes chan<- viewNote) {
	conn.SetReadLimit(maxInputSize)
	for {
		_, b, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var in input
		if err := json.Unmarshal(b, &in); err != nil {
			note(notes, "A message of this page was not understood ("+err.Error()+"); reload the page.")
			continue
		}
		switch in.Type {
		case "hold":
			if tab.Human {
				note(notes, "This is your own tab: it needs no taking over.")
			} else if err := view.Hold(holder); errors.Is(err, mux.ErrHeldByOther) {
				note(notes, "Another viewer controls this tab: wait for them to release it, or ask them to.")
			} else if err != nil {
				note(notes, "The tab was not taken over: "+err.Error())
			}
			refresh(notes)
		case "release":
			view.Release()
			refresh(notes)
		default:
			if err := dispatch(ctx, view, tab, in); err != nil {
				note(notes, err.Error())
			}
		}
	}
}

// refresh asks the writer for the metadata now. A full channel already holds notes, and the writer sends
// the metadata every second anyway.
func refresh(notes chan<- viewNote) {
	select {
	case notes <- viewNote{Type: "refresh"}:
	default:
	}
}

func note(notes chan<- viewNote, msg string) {
	select {
	case notes <- viewNote{Type: "error", Message: msg}:
	default:
	}
}

// errViewOnly refuses input to a tab of an agent that this viewer has not taken over; errHeldElsewhere, to one
// that another viewer holds (Take over is hidden then).
var (
	errViewOnly      = errors.New("this tab belongs to an agent: press Take over to control it (the agent then waits until you Release it)")
	errHeldElsewhere = errors.New("another viewer has taken this tab over: wait for them to release it, then press Take over")
)

// dispatch sends one input message to the view: a human tab takes input, an agent's tab only while this
// view holds it.
func dispatch(ctx context.Context, view View, tab mux.TabInfo, in input) error {
	if !tab.Human && !view.Holding() {
		if view.HeldBy() != "" {
			return errHeldElsewhere
		}
		return errViewOnly
	}
	ctx, cancel := context.WithTimeout(ctx, inputWait)
	defer cancel()
	var err error
	switch in.Type {
	case "mouse":
		types := map[string]string{"down": "mousePressed", "up": "mouseReleased", "move": "mouseMoved"}
		typ, ok := types[in.Event]
		if !ok {
			return fmt.Errorf("a mouse event must be down, up or move, not %q", in.Event)
		}
		err = view.Mouse(ctx, mux.MouseEvent{Type: typ, X: in.X, Y: in.Y, Button: in.Button, Buttons: in.Buttons,
			ClickCount: in.Clicks, Modifiers: in.Mods})
	case "wheel":
		err = view.Mouse(ctx, mux.MouseEvent{Type: "mouseWheel", X: in.X, Y: in.Y, DeltaX: in.DX, DeltaY: in.DY, Modifiers: in.Mods})
	case "key":
		types := map[string]string{"down": "keyDown", "up": "keyUp"}
		typ, ok := types[in.Event]
		if !ok {
			return fmt.Errorf("a key event must be down or up, not %q", in.Event)
		}
		e := mux.KeyEvent{Type: typ, Key: in.Key, Code: in.Code, Modifiers: in.Mods, WindowsVirtualKeyCode: in.KeyCode}
		if typ == "keyDown" {
			e.Text = in.Text
		}
		err = view.Key(ctx, e)
	case "text":
		err = view.InsertText(ctx, in.Text)
	case "navigate":
		var u string
		if u, err = TabURL(in.URL); err == nil {
			err = view.Navigate(ctx, u)
		}
	case "back":
		err = view.Back(ctx)
	case "forward":
		err = view.Forward(ctx)
	case "reload":
		err = view.Reload(ctx)
	default:
		return fmt.Errorf("unknown input %q: want mouse, wheel, key, text, navigate, back, forward, reload, hold or release", in.Type)
	}
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the tab did not take the %s within %v: the page is busy; try again", in.Type, inputWait)
	case err != nil && ctx.Err() == nil:
		return fmt.Errorf("%s did not reach the tab: %w", in.Type, err)
	}
	return err
}

// writeView is the socket's one writer: it takes frames one at a time (the next is taken only after
// this one is written, so a slow viewer gets fewer frames, never a backlog), and sends metadata and
// notes between them. The tab's title and URL are asked of the browser (PageInfo, a round trip that may
// take inputWait) off the writer's path: once when the view starts, then every metaEvery and when a frame
// says the page navigated; frames go out meanwhile with the last answer.
func (s *Server) writeView(ctx context.Context, conn *websocket.Conn, br Browser, view View, id, holder string, notes <-chan viewNote) {
	ctx, cancel := context.WithCancel(ctx)
	frames := make(chan mux.Frame) // unbuffered: the taker waits for the writer, so Next paces Chrome
	takerDone := make(chan error, 1)
	go func() {
		for {
			f, err := view.Next(ctx)
			if err != nil {
				takerDone <- err
				return
			}
			select {
			case frames <- f:
			case <-ctx.Done():
				takerDone <- ctx.Err()
				return
			}
		}
	}()
	// asks and answers hold at most one each: an ask waiting is enough, and only the newest answer counts.
	asks, answers := make(chan struct{}, 1), make(chan pageInfo, 1)
	askerDone := make(chan struct{})
	go func() {
		defer close(askerDone)
		for {
			select {
			case <-ctx.Done():
				return
			case <-asks:
			}
			info := readPageInfo(ctx, br, id)
			select {
			case <-answers: // not taken yet: the newer one replaces it
			default:
			}
			answers <- info
		}
	}()
	defer func() { cancel(); <-takerDone; <-askerDone }() // both end with ctx
	ask := func() {
		select {
		case asks <- struct{}{}:
		default:
		}
	}
	tick := time.NewTicker(metaEvery)
	defer tick.Stop()
	info := readPageInfo(ctx, br, id) // the first metadata already says where the tab is
	var meta viewMeta
	navigations := 0
	send := func(typ int, b []byte) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
		return conn.WriteMessage(typ, b) == nil
	}
	sendMeta := func(w, h float64) bool {
		next := meta
		next.Type = "meta"
		if w > 0 {
			next.Width, next.Height = w, h
		}
		next.URL, next.Title = info.url, info.title
		next.Hold = holdState(view.HeldBy(), holder)
		if next.Hold == "you" && !view.Holding() {
			next.Hold = "other" // this person's other page holds it: input goes there, not here
		}
		if next == meta {
			return true
		}
		meta = next
		b, _ := json.Marshal(meta)
		return send(websocket.TextMessage, b)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-frames:
			if f.Navigations != navigations {
				navigations = f.Navigations
				ask()
			}
			if !sendMeta(f.DeviceWidth, f.DeviceHeight) || !send(websocket.BinaryMessage, f.JPEG) {
				return
			}
		case info = <-answers:
			if !sendMeta(0, 0) {
				return
			}
		case n := <-notes:
			if n.Type == "refresh" {
				if !sendMeta(0, 0) {
					return
				}
				continue
			}
			b, _ := json.Marshal(n)
			if !send(websocket.TextMessage, b) {
				return
			}
		case <-tick.C:
			ask()
			if !sendMeta(0, 0) { // who holds the tab may have changed meanwhile
				return
			}
		case <-view.Done():
			msg := "The live view ended: " + endReason(view.Err())
			b, _ := json.Marshal(viewNote{Type: "end", Message: msg})
			send(websocket.TextMessage, b)
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
				time.Now().Add(time.Second))
			return
		}
	}
}

// pageInfo is a tab's title and URL.
type pageInfo struct{ title, url string }

// readPageInfo asks the browser for the tab's title and URL, or takes what its client list says when the
// browser does not answer within inputWait.
func readPageInfo(ctx context.Context, br Browser, id string) pageInfo {
	ctx, cancel := context.WithTimeout(ctx, inputWait)
	defer cancel()
	if title, u, err := br.PageInfo(ctx, id); err == nil {
		return pageInfo{title, u}
	}
	t, _ := findTab(br, id)
	return pageInfo{t.Title, t.URL}
}

func endReason(err error) string {
	switch {
	case errors.Is(err, mux.ErrTargetClosed):
		return "the tab was closed. Go back to the store page for the tabs it has now."
	case errors.Is(err, mux.ErrDisconnected):
		return "the browser went away (it stopped or crashed). The store page says whether it is running again."
	}
	return fmt.Sprintf("%v. Reload the page to watch again.", err)
}
