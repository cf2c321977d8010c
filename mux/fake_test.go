package mux

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
)

// fakeBrowser is a fake CDP browser speaking enough of Chrome's protocol for the mux: Target.* with tab
// targets (puppeteer's view), flat sessions, discovery events, Browser.*, and id checks like Chrome's.
// It is one file (over the 600 lines a file here usually keeps to) because it is one fake: its handlers
// share its tables, and splitting them would scatter one protocol. It has two fronts, one per transport
// of the mux: its debugging port (HTTP and a WebSocket, here) and a keeper's socket (fakekeeper_test.go);
// the same browser answers behind either.
type fakeBrowser struct {
	t   *testing.T
	srv *httptest.Server
	kp  *fakeKeeper // the keeper front, nil for a browser reached on its port

	mu sync.Mutex
	// mu guards the fields below.
	link      fakeLink // the live connection to the mux, through either front
	targets   map[string]*fakeTarget
	order     []string
	sessions  map[string]string // session -> target
	parents   map[string]string // session -> the session it was attached from ("" for the root)
	casting   map[string]bool   // sessions with a screencast on
	frames    int               // screencast frames sent
	still     bool              // the page does not change: every frame repeats the last image
	refusing  bool              // new connections are refused (an outage)
	image     int               // the number in the last frame's image
	discover  bool
	auto      bool            // browser-level auto-attach on (Target.setAutoAttach)
	autoWait  bool            // its new targets start paused
	autoTypes map[string]bool // the target types it attaches
	paused    map[string]bool // sessions whose target waits for runIfWaitingForDebugger
	asked     map[string]bool // sessions made by a Target.attachToTarget (not by auto-attach)
	next      int
	received  []fakeMsg
	stall     map[string]bool // methods left unanswered
	contexts  []string        // created browser contexts
	pongs     []string        // pong payloads received
	extra     int             // pages (with tabs) that appear before the next created one, like a startup tab
	conns     int
	refusals  int               // keeper connections refused because another client held the keeper
	dlPath    string            // downloadPath of the last Browser.setDownloadBehavior for the default context
	dlParams  []string          // params of every Browser.setDownloadBehavior, in order
	dlGone    map[string]bool   // downloads canceled (Browser.cancelDownload): as on Chrome, they never complete
	hidden    bool              // pages are background tabs: a capture waits for a frame (setHidden)
	shots     map[string]string // per page, the answer of a capture that waits for its next frame
	pageOn    map[string]bool   // sessions that enabled the Page domain: they get its navigation events
}

type fakeTarget struct {
	ID, Type, URL, Opener, Tab string
	// Title is what the document set ("": its URL, as Chrome shows a page with no title of its own). As on
	// Chrome, setting it announces nothing (setTitle).
	Title    string
	History  []string // navigation history of a page; its current entry is Index
	Index    int
	Attached int      // sessions attached, as Chrome's targetInfo "attached" shows
	Frames   []string // same-process subframes of a page (no targets of their own)
}

type fakeMsg struct {
	ID        json.RawMessage `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
	raw       string
}

// newFakeBrowser is a fake browser reached on its debugging port.
func newFakeBrowser(t *testing.T) *fakeBrowser {
	t.Helper()
	fb := &fakeBrowser{t: t, targets: map[string]*fakeTarget{}, sessions: map[string]string{}, parents: map[string]string{},
		casting: map[string]bool{}, stall: map[string]bool{}, paused: map[string]bool{}, asked: map[string]bool{},
		shots: map[string]string{}, pageOn: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/json/version", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"Browser":"FakeChrome/1.0","Protocol-Version":"1.3","User-Agent":"fake","V8-Version":"1","WebKit-Version":"1","webSocketDebuggerUrl":"ws://%s/devtools/browser/fake"}`, r.Host)
	})
	mux.HandleFunc("/devtools/browser/fake", fb.serveWS)
	fb.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		fb.drop()
		fb.srv.Close()
	})
	return fb
}

func (fb *fakeBrowser) url() string { return fb.srv.URL }

// endpoint is the mux's Upstream for fb: its keeper's socket when it has one, else its port.
func (fb *fakeBrowser) endpoint() string {
	if fb.kp != nil {
		return keeperPrefix + fb.kp.socket
	}
	return fb.url()
}

// gone takes the browser away for good: its front stops answering, and its connection drops.
func (fb *fakeBrowser) gone() {
	if fb.kp != nil {
		fb.kp.ln.Close()
	} else {
		fb.srv.Listener.Close()
	}
	fb.drop()
}

// fakeLink is the fake browser's live connection to the mux, through either front. Its methods are
// called with fb.mu held, which serialises the writes.
type fakeLink interface {
	send(msg string)
	// sendPieces sends the concatenation of pieces as one message that reaches the mux in parts:
	// WebSocket continuation frames, or separate socket writes on a keeper's socket.
	sendPieces(pieces ...string)
	// ping sends a WebSocket ping; a keeper's socket has no control messages and sends nothing.
	ping(payload string)
	close()
}

// fakeWSLink is a WebSocket connection to the fake's debugging port.
type fakeWSLink struct{ ws *websocket.Conn }

func (l fakeWSLink) send(msg string) { l.ws.WriteMessage(websocket.TextMessage, []byte(msg)) }

func (l fakeWSLink) sendPieces(pieces ...string) {
	w, err := l.ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return
	}
	for _, p := range pieces {
		io.WriteString(w, p)
	}
	w.Close()
}

func (l fakeWSLink) ping(payload string) {
	l.ws.WriteControl(websocket.PingMessage, []byte(payload), time.Now().Add(time.Second))
}

func (l fakeWSLink) close() { l.ws.Close() }

// connectLocked makes l the browser's WebSocket connection, which, as on Chrome, starts with no sessions, no
// discovery and no auto-attach. (The keeper front's pipe is one connection for the browser's whole life: a
// client gets what the one before it left, fakekeeper_test.go.)
func (fb *fakeBrowser) connectLocked(l fakeLink) {
	fb.link = l
	fb.discover = false
	fb.sessions = map[string]string{}
	fb.parents = map[string]string{}
	fb.casting = map[string]bool{}
	fb.paused = map[string]bool{}
	fb.asked = map[string]bool{}
	fb.auto = false
	fb.conns++
}

// disconnected forgets l once its connection has ended.
func (fb *fakeBrowser) disconnected(l fakeLink) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if fb.link == l {
		fb.link = nil
	}
}

// addPage adds a page (with its tab) without a client asking, like a human or a restored session.
func (fb *fakeBrowser) addPage(url, opener string) string {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return fb.addPageLocked(url, opener)
}

func (fb *fakeBrowser) addPageLocked(url, opener string) string {
	fb.next++
	tab := fmt.Sprintf("TAB%d", fb.next)
	page := fmt.Sprintf("PAGE%d", fb.next)
	fb.targets[tab] = &fakeTarget{ID: tab, Type: "tab", URL: url}
	fb.targets[page] = &fakeTarget{ID: page, Type: "page", URL: url, Opener: opener, Tab: tab}
	fb.order = append(fb.order, tab, page)
	if fb.discover {
		fb.sendLocked(`{"method":"Target.targetCreated","params":{"targetInfo":` + fb.targets[tab].info() + `}}`)
		fb.sendLocked(`{"method":"Target.targetCreated","params":{"targetInfo":` + fb.targets[page].info() + `}}`)
	}
	for _, id := range []string{tab, page} {
		if t := fb.targets[id]; fb.auto && fb.autoTypes[t.Type] {
			fb.attachLocked(t, "", fb.autoWait)
		}
	}
	return page
}

// attachLocked attaches a new session to t, announced on parent ("" for the browser) as Chrome does:
// the flip of "attached" first, then the attach. A paused session waits for runIfWaitingForDebugger.
func (fb *fakeBrowser) attachLocked(t *fakeTarget, parent string, paused bool) string {
	fb.next++
	sid := fmt.Sprintf("SESS%d", fb.next)
	fb.sessions[sid] = t.ID
	fb.parents[sid] = parent // Chrome announces a session on the session that asked for it
	if paused {
		fb.paused[sid] = true
	}
	if t.Attached++; t.Attached == 1 && fb.discover {
		fb.sendLocked(`{"method":"Target.targetInfoChanged","params":{"targetInfo":` + t.info() + `}}`)
	}
	fb.sendLocked(withFakeSession(`{"method":"Target.attachedToTarget","params":{"sessionId":"`+sid+`","targetInfo":`+t.info()+`,"waitingForDebugger":`+strconv.FormatBool(paused)+`}}`, parent))
	return sid
}

// fakeFilterTypes reads the target types a Target.TargetFilter includes (Chrome's default: pages only,
// for the fake's tabs and pages).
func fakeFilterTypes(f any) map[string]bool {
	types := map[string]bool{}
	entries, _ := f.([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		typ, _ := m["type"].(string)
		if exclude, _ := m["exclude"].(bool); !exclude && typ != "" {
			types[typ] = true
		}
	}
	if len(entries) == 0 {
		types["page"] = true
	}
	return types
}

func (ft *fakeTarget) info() string {
	title := ft.Title
	if title == "" {
		title = ft.URL
	}
	b, _ := json.Marshal(map[string]any{"targetId": ft.ID, "type": ft.Type, "url": ft.URL, "title": title, "attached": ft.Attached > 0, "openerId": ft.Opener, "browserContextId": "CTX0"})
	if ft.Opener == "" {
		b, _ = json.Marshal(map[string]any{"targetId": ft.ID, "type": ft.Type, "url": ft.URL, "title": title, "attached": ft.Attached > 0, "browserContextId": "CTX0"})
	}
	return string(b)
}

// setTitle is a page's document setting its title: Chrome announces no targetInfoChanged for it.
func (fb *fakeBrowser) setTitle(id, title string) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.targets[id].Title = title
}

func (fb *fakeBrowser) serveWS(w http.ResponseWriter, r *http.Request) {
	fb.mu.Lock()
	refusing := fb.refusing
	fb.mu.Unlock()
	if refusing {
		http.Error(w, "the browser is down", http.StatusServiceUnavailable)
		return
	}
	up := websocket.Upgrader{}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	l := fakeWSLink{ws}
	fb.mu.Lock()
	fb.connectLocked(l)
	fb.mu.Unlock()
	ws.SetReadLimit(-1)
	ws.SetPongHandler(func(data string) error {
		fb.mu.Lock()
		fb.pongs = append(fb.pongs, data)
		fb.mu.Unlock()
		return nil
	})
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			fb.disconnected(l)
			return
		}
		fb.handle(b)
	}
}

// beginDownload starts a download the way Chrome does under allowAndName: downloadWillBegin for frame,
// then the partial file <downloadPath>/<guid>.crdownload and an inProgress event.
func (fb *fakeBrowser) beginDownload(frame, guid, name string) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if err := os.WriteFile(filepath.Join(fb.dlPath, guid+".crdownload"), []byte("partial"), 0o600); err != nil {
		fb.t.Errorf("fake download %s: %v", guid, err)
	}
	fb.sendLocked(fmt.Sprintf(`{"method":"Browser.downloadWillBegin","params":{"frameId":%q,"guid":%q,"url":"http://site.test/%s","suggestedFilename":%q}}`, frame, guid, guid, name))
	fb.sendLocked(`{"method":"Browser.downloadProgress","params":{"guid":"` + guid + `","totalBytes":7,"receivedBytes":7,"state":"inProgress"}}`)
}

// completeDownload finishes a download with content: the partial file is renamed to <downloadPath>/<guid>
// and completed sent, with Chrome's filePath.
func (fb *fakeBrowser) completeDownload(guid, content string) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if fb.dlGone[guid] { // the mux canceled it before the test completed it: Chrome writes nothing more
		return
	}
	part, final := filepath.Join(fb.dlPath, guid+".crdownload"), filepath.Join(fb.dlPath, guid)
	if err := os.WriteFile(part, []byte(content), 0o600); err != nil {
		fb.t.Errorf("fake download %s: %v", guid, err)
	}
	if err := os.Rename(part, final); err != nil {
		fb.t.Errorf("fake download %s: %v", guid, err)
	}
	fb.sendLocked(fmt.Sprintf(`{"method":"Browser.downloadProgress","params":{"guid":%q,"totalBytes":%d,"receivedBytes":%d,"state":"completed","filePath":%q}}`, guid, len(content), len(content), final))
}

// addFrame gives page a same-process subframe: a frame id that is no target.
func (fb *fakeBrowser) addFrame(page, frame string) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.targets[page].Frames = append(fb.targets[page].Frames, frame)
}

// downloadBehaviors returns the params of every Browser.setDownloadBehavior the browser got, but the reset a
// mux makes when it takes a keeper's pipe (keeperreset.go; TestPipeIsMadeFresh looks at that one).
func (fb *fakeBrowser) downloadBehaviors() []string {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	var out []string
	for _, p := range fb.dlParams {
		if p != `{"behavior":"default"}` {
			out = append(out, p)
		}
	}
	return out
}

// refuse makes the browser refuse new connections (an outage) or take them again.
func (fb *fakeBrowser) refuse(on bool) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.refusing = on
}

// drop kills the browser connection, as a crash would.
func (fb *fakeBrowser) drop() {
	fb.mu.Lock()
	l := fb.link
	fb.link = nil
	fb.mu.Unlock()
	if l != nil {
		l.close()
	}
}

func (fb *fakeBrowser) connections() int {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return fb.conns
}

func (fb *fakeBrowser) sendLocked(s string) {
	if fb.link != nil {
		fb.link.send(s)
	}
}

func (fb *fakeBrowser) send(s string) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.sendLocked(s)
}

// got returns the messages the browser received with the given method.
func (fb *fakeBrowser) got(method string) []fakeMsg {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	var out []fakeMsg
	for _, m := range fb.received {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

func (fb *fakeBrowser) hasTarget(id string) bool {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return fb.targets[id] != nil
}

func (fb *fakeBrowser) setStall(method string, on bool) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.stall[method] = on
}

func (fb *fakeBrowser) handle(b []byte) {
	var msg fakeMsg
	if err := json.Unmarshal(b, &msg); err != nil {
		fb.send(`{"error":{"code":-32700,"message":"JSON: invalid"}}`)
		return
	}
	msg.raw = string(b)
	id, err := strconv.ParseInt(string(msg.ID), 10, 64)
	if err != nil || id > math.MaxInt32 || id < math.MinInt32 {
		// Chrome's answer to a non-int32 id has no id at all.
		fb.send(`{"error":{"code":-32600,"message":"Message must have integer 'id' property"}}`)
		return
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.received = append(fb.received, msg)
	if fb.stall[msg.Method] {
		return
	}
	var p map[string]any
	json.Unmarshal(msg.Params, &p)
	str := func(k string) string { s, _ := p[k].(string); return s }
	reply := func(result string) {
		s := `{"id":` + string(msg.ID) + `,"result":` + result
		if msg.SessionID != "" {
			s += `,"sessionId":"` + msg.SessionID + `"`
		}
		fb.sendLocked(s + "}")
	}
	replyErr := func(code int, text string) {
		fb.sendLocked(fmt.Sprintf(`{"id":%s,"error":{"code":%d,"message":%q}}`, msg.ID, code, text))
	}
	switch msg.Method {
	case "Target.setDiscoverTargets":
		fb.discover, _ = p["discover"].(bool)
		if fb.discover {
			for _, id := range fb.order {
				fb.sendLocked(`{"method":"Target.targetCreated","params":{"targetInfo":` + fb.targets[id].info() + `}}`)
			}
		}
		reply("{}")
	case "Target.getTargets":
		var infos []string
		for _, id := range fb.order {
			infos = append(infos, fb.targets[id].info())
		}
		reply(`{"targetInfos":[` + strings.Join(infos, ",") + `]}`)
	case "Target.getTargetInfo":
		ft := fb.targets[str("targetId")]
		if ft == nil {
			replyErr(-32602, "No target with given id found")
			break
		}
		reply(`{"targetInfo":` + ft.info() + `}`)
	case "Target.createTarget":
		for ; fb.extra > 0; fb.extra-- {
			fb.addPageLocked("about:blank", "")
		}
		page := fb.addPageLocked(str("url"), "")
		reply(`{"targetId":"` + page + `"}`)
	case "Target.attachToBrowserTarget":
		fb.next++
		sid := fmt.Sprintf("BSESS%d", fb.next)
		fb.sessions[sid] = "BROWSER"
		fb.sendLocked(`{"method":"Target.attachedToTarget","params":{"sessionId":"` + sid + `","targetInfo":{"targetId":"BROWSER","type":"browser","title":"","url":"","attached":true},"waitingForDebugger":false}}`)
		reply(`{"sessionId":"` + sid + `"}`)
	case "Target.attachToTarget":
		t := fb.targets[str("targetId")]
		if t == nil {
			replyErr(-32602, "No target with given id found")
			return
		}
		sid := fb.attachLocked(t, msg.SessionID, false)
		fb.asked[sid] = true
		reply(`{"sessionId":"` + sid + `"}`)
	case "Target.setAutoAttach":
		if msg.SessionID != "" {
			reply("{}") // a page session's auto-attach (frames, workers): nothing to attach in the fake
			break
		}
		// Chrome's browser-level auto-attach: the existing matching targets now, each new one paused
		// when asked (addPageLocked).
		fb.auto, _ = p["autoAttach"].(bool)
		fb.autoWait, _ = p["waitForDebuggerOnStart"].(bool)
		fb.autoTypes = fakeFilterTypes(p["filter"])
		if fb.auto {
			for _, id := range fb.order {
				if t := fb.targets[id]; fb.autoTypes[t.Type] {
					fb.attachLocked(t, "", false)
				}
			}
		}
		reply("{}")
	case "Runtime.runIfWaitingForDebugger":
		delete(fb.paused, msg.SessionID)
		reply("{}")
	case "Target.detachFromTarget":
		sid := str("sessionId")
		if sid == "" && str("targetId") != "" {
			// By target: one session of this connection's attached from the browser, as on Chrome.
			sid = fb.rootSessionLocked(str("targetId"))
			if sid == "" {
				replyErr(-32602, "No session for given target id")
				break
			}
		}
		if tid, ok := fb.sessions[sid]; ok {
			fb.detachTreeLocked(sid, tid)
		}
		reply("{}")
	case "Page.enable":
		fb.pageOn[msg.SessionID] = true
		reply("{}")
	case "Page.startScreencast":
		fb.casting[msg.SessionID] = true
		reply("{}")
		fb.frameLocked(msg.SessionID)
		if tid := fb.sessions[msg.SessionID]; fb.shots[tid] != "" {
			fb.sendLocked(fb.shots[tid])
			delete(fb.shots, tid)
		}
	case "Page.stopScreencast":
		delete(fb.casting, msg.SessionID)
		reply("{}")
	case "Page.captureScreenshot":
		answer := `{"id":` + string(msg.ID) + `,"result":{"data":"` + fakeShot() + `"},"sessionId":"` + msg.SessionID + `"}`
		if !fb.hidden {
			fb.sendLocked(answer)
			break
		}
		// A hidden tab, as on Chrome: a capture is answered once the tab draws another frame, which here
		// only a screencast on the tab makes it draw.
		tid := fb.sessions[msg.SessionID]
		for sid := range fb.casting {
			if fb.sessions[sid] == tid {
				fb.sendLocked(answer)
				return
			}
		}
		fb.shots[tid] = answer
	case "Page.getLayoutMetrics":
		vp := `{"pageX":0,"pageY":40,"clientWidth":1280,"clientHeight":720,"offsetX":0,"offsetY":0,"scale":1,"zoom":1}`
		reply(`{"cssVisualViewport":` + vp + `,"cssLayoutViewport":{"pageX":0,"pageY":40,"clientWidth":1280,"clientHeight":720}}`)
	case "Page.navigate":
		t := fb.targets[fb.sessions[msg.SessionID]]
		if t == nil {
			replyErr(-32000, "no page")
			return
		}
		if len(t.History) == 0 {
			t.History = []string{t.URL}
		}
		t.History = append(t.History[:t.Index+1], str("url"))
		t.Index = len(t.History) - 1
		fb.setURLLocked(t, str("url"))
		reply(`{"frameId":"` + t.ID + `","loaderId":"L1"}`)
	case "Page.getNavigationHistory":
		t := fb.targets[fb.sessions[msg.SessionID]]
		if t == nil {
			replyErr(-32000, "no page")
			return
		}
		if len(t.History) == 0 {
			t.History = []string{t.URL}
		}
		var es []string
		for i, u := range t.History {
			es = append(es, fmt.Sprintf(`{"id":%d,"url":%q,"userTypedURL":%q,"title":%q,"transitionType":"link"}`, i+1, u, u, u))
		}
		reply(fmt.Sprintf(`{"currentIndex":%d,"entries":[%s]}`, t.Index, strings.Join(es, ",")))
	case "Page.navigateToHistoryEntry":
		t := fb.targets[fb.sessions[msg.SessionID]]
		n, _ := p["entryId"].(float64)
		if t == nil || int(n) < 1 || int(n) > len(t.History) {
			replyErr(-32602, "No entry with passed id")
			return
		}
		t.Index = int(n) - 1
		fb.setURLLocked(t, t.History[t.Index])
		reply("{}")
	case "Target.closeTarget":
		t := fb.targets[str("targetId")]
		if t == nil {
			replyErr(-32602, "No target with given id found")
			return
		}
		fb.removeLocked(t.ID)
		if t.Tab != "" {
			fb.removeLocked(t.Tab)
		}
		reply(`{"success":true}`)
	case "Target.createBrowserContext":
		fb.next++
		id := fmt.Sprintf("CTX%d", fb.next)
		fb.contexts = append(fb.contexts, id)
		reply(`{"browserContextId":"` + id + `"}`)
	case "Target.getBrowserContexts":
		ids, _ := json.Marshal(fb.contexts)
		reply(`{"browserContextIds":` + string(ids) + `,"defaultBrowserContextId":"CTX0"}`)
	case "Browser.setDownloadBehavior":
		fb.dlParams = append(fb.dlParams, string(msg.Params))
		if str("browserContextId") == "" {
			fb.dlPath = str("downloadPath")
		}
		reply("{}")
	case "Browser.cancelDownload":
		if fb.dlGone == nil {
			fb.dlGone = map[string]bool{}
		}
		fb.dlGone[str("guid")] = true
		os.Remove(filepath.Join(fb.dlPath, str("guid")+".crdownload"))
		fb.sendLocked(`{"method":"Browser.downloadProgress","params":{"guid":"` + str("guid") + `","totalBytes":0,"receivedBytes":0,"state":"canceled"}}`)
		reply("{}")
	case "Page.getFrameTree":
		t := fb.targets[fb.sessions[msg.SessionID]]
		if t == nil {
			replyErr(-32000, "no page")
			return
		}
		var kids []string
		for _, f := range t.Frames {
			kids = append(kids, `{"frame":{"id":"`+f+`","parentId":"`+t.ID+`"}}`)
		}
		reply(`{"frameTree":{"frame":{"id":"` + t.ID + `"},"childFrames":[` + strings.Join(kids, ",") + `]}}`)
	case "Browser.getVersion":
		reply(`{"protocolVersion":"1.3","product":"FakeChrome/1.0","revision":"1","userAgent":"fake","jsVersion":"1"}`)
	case "Runtime.evaluate":
		// Echo the expression's raw JSON bytes, as Chrome writes strings (no HTML escaping).
		var raw struct {
			Expression json.RawMessage `json:"expression"`
		}
		json.Unmarshal(msg.Params, &raw)
		reply(`{"result":{"type":"string","value":` + string(raw.Expression) + `}}`)
	case "Test.fragmented":
		// In parts (continuation frames, or socket writes): the mux must reassemble what it does not
		// write itself.
		if fb.link != nil {
			fb.link.sendPieces(`{"id":`+string(msg.ID)+`,"result":{"data":"`+strings.Repeat("f", 10000), strings.Repeat("g", 10000)+`"}}`)
		}
	case "Test.ping":
		if fb.link != nil {
			fb.link.ping("hi")
		}
		reply("{}")
	case "Page.printToPDF":
		// Chrome's handles are small numbers: a guess finds another client's.
		reply(`{"data":"","stream":"` + strconv.Itoa(len(fb.received)) + `"}`)
	case "IO.read":
		reply(`{"data":"pdf bytes","eof":true}`)
	case "Test.big":
		n, _ := p["size"].(float64)
		reply(`{"data":"` + strings.Repeat("x", int(n)) + `"}`)
	default:
		reply("{}")
	}
}

func (fb *fakeBrowser) removeLocked(id string) {
	delete(fb.targets, id)
	for i, o := range fb.order {
		if o == id {
			fb.order = append(fb.order[:i], fb.order[i+1:]...)
			break
		}
	}
	for sid, tid := range fb.sessions {
		if tid == id {
			fb.detachLocked(sid, tid)
		}
	}
	if fb.discover {
		fb.sendLocked(`{"method":"Target.targetDestroyed","params":{"targetId":"` + id + `"}}`)
	}
}

// rootSessionLocked is a session on target tid attached from the browser (not through another session), ""
// when there is none: the first by id, so a test sees the same order each run.
func (fb *fakeBrowser) rootSessionLocked(tid string) string {
	found := ""
	for sid, t := range fb.sessions {
		if t == tid && fb.parents[sid] == "" && (found == "" || sid < found) {
			found = sid
		}
	}
	return found
}

// detachTreeLocked detaches session sid and, first, every session attached through it, as Chrome does when a
// session goes.
func (fb *fakeBrowser) detachTreeLocked(sid, tid string) {
	for child, parent := range fb.parents {
		if parent == sid {
			fb.detachTreeLocked(child, fb.sessions[child])
		}
	}
	fb.detachLocked(sid, tid)
}

func (fb *fakeBrowser) detachLocked(sid, tid string) {
	parent := fb.parents[sid]
	if t := fb.targets[tid]; t != nil {
		if t.Attached--; t.Attached == 0 && fb.discover {
			fb.sendLocked(`{"method":"Target.targetInfoChanged","params":{"targetInfo":` + t.info() + `}}`)
		}
	}
	delete(fb.sessions, sid)
	delete(fb.pageOn, sid)
	delete(fb.parents, sid)
	delete(fb.casting, sid)
	delete(fb.paused, sid)
	delete(fb.asked, sid)
	fb.sendLocked(withFakeSession(`{"method":"Target.detachedFromTarget","params":{"sessionId":"`+sid+`","targetId":"`+tid+`"}}`, parent))
}

// pageEventLocked sends a Page event about page tid to each of its sessions that enabled the Page domain.
func (fb *fakeBrowser) pageEventLocked(tid, ev string) {
	for sid, on := range fb.pageOn {
		if on && fb.sessions[sid] == tid {
			fb.sendLocked(withFakeSession(ev, sid))
		}
	}
}

// pageEvent is pageEventLocked for a test: a navigation inside a page, say.
func (fb *fakeBrowser) pageEvent(tid, ev string) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.pageEventLocked(tid, ev)
}

// withFakeSession puts a sessionId on an event the fake sends ("" leaves it a root event).
func withFakeSession(ev, sid string) string {
	if sid == "" {
		return ev
	}
	return ev[:len(ev)-1] + `,"sessionId":"` + sid + `"}`
}

func (fb *fakeBrowser) setURLLocked(t *fakeTarget, url string) {
	t.URL, t.Title = url, "" // a new document has no title until it sets one
	fb.pageEventLocked(t.ID, fmt.Sprintf(`{"method":"Page.frameNavigated","params":{"frame":{"id":%q,"loaderId":"L1","url":%q},"type":"Navigation"}}`, t.ID, url))
	if fb.discover {
		fb.sendLocked(`{"method":"Target.targetInfoChanged","params":{"targetInfo":` + t.info() + `}}`)
	}
}

// frame sends a screencast frame on every session with a screencast on, as a repaint would; it returns
// how many frames the browser has sent in all.
func (fb *fakeBrowser) frame() int {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	for sid := range fb.casting {
		fb.frameLocked(sid)
	}
	return fb.frames
}

// frameLocked sends frame number fb.frames+1 on sid; its JPEG is the text "frame-N", or the last frame's
// while the page is still.
func (fb *fakeBrowser) frameLocked(sid string) {
	fb.frames++
	n := fb.frames
	if !fb.still {
		fb.image = n
	}
	data := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("frame-%d", fb.image)))
	fb.sendLocked(fmt.Sprintf(`{"method":"Page.screencastFrame","params":{"data":%q,"metadata":{"offsetTop":0,"pageScaleFactor":1,"deviceWidth":800,"deviceHeight":600,"scrollOffsetX":0,"scrollOffsetY":0,"timestamp":1700000000.5},"sessionId":%d},"sessionId":%q}`, data, n, sid))
}

// setHidden makes every page a background tab, as on Chrome: a capture is answered only once the page
// draws another frame, which here only a screencast on the page makes it draw.
func (fb *fakeBrowser) setHidden(hidden bool) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.hidden = hidden
}

// The fake's viewport: fakeWidth×fakeHeight pixels, white, with a fakeStripe pixels wide red stripe at its
// left edge (a capture cropped on the left loses it).
const (
	fakeWidth, fakeHeight, fakeStripe = 1280, 720, 40
)

// fakeShot is the base64 JPEG of the fake's viewport.
var fakeShot = sync.OnceValue(func() string {
	img := image.NewRGBA(image.Rect(0, 0, fakeWidth, fakeHeight))
	draw.Draw(img, img.Rect, image.White, image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(0, 0, fakeStripe, fakeHeight), image.NewUniform(color.RGBA{220, 20, 20, 255}), image.Point{}, draw.Src)
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		panic(err) // an in-memory encode of a valid image
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
})

// setStill makes the page stop changing (every frame repeats the last image) or change again.
func (fb *fakeBrowser) setStill(still bool) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.still = still
}

// casts returns the sessions with a screencast on.
func (fb *fakeBrowser) casts() int {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return len(fb.casting)
}

// askedSessionOf returns a session of target tid that a Target.attachToTarget made (a client's, not the
// mux's short-lived auto-attach), or "".
func (fb *fakeBrowser) askedSessionOf(tid string) string {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	for sid, t := range fb.sessions {
		if t == tid && fb.asked[sid] {
			return sid
		}
	}
	return ""
}

// sessionOf returns a session the browser has for target id.
func (fb *fakeBrowser) sessionOf(tid string) string {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	for sid, t := range fb.sessions {
		if t == tid {
			return sid
		}
	}
	return ""
}

// testClient is a real WebSocket CDP client of the mux.
type testClient struct {
	t  *testing.T
	ws *websocket.Conn

	wmu sync.Mutex // one writer at a time, gorilla's contract

	mu sync.Mutex
	// mu guards the fields below.
	msgs    []json.RawMessage
	closeCd int
	done    bool
	nextID  int
}

type cdpMsg struct {
	ID        json.RawMessage `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func dialMux(t *testing.T, m *Mux, path string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	return d.Dial("ws://"+m.Addr()+path, hdr)
}

func newClient(t *testing.T, m *Mux, id string) *testClient {
	t.Helper()
	ws, _, err := dialMux(t, m, "/tok/client-"+id, nil)
	if err != nil {
		t.Fatalf("dial client %s: %v", id, err)
	}
	c := &testClient{t: t, ws: ws}
	t.Cleanup(func() { ws.Close() })
	go c.read()
	return c
}

func (c *testClient) read() {
	for {
		_, b, err := c.ws.ReadMessage()
		c.mu.Lock()
		if err != nil {
			if ce, ok := err.(*websocket.CloseError); ok {
				c.closeCd = ce.Code
			}
			c.done = true
			c.mu.Unlock()
			return
		}
		c.msgs = append(c.msgs, b)
		c.mu.Unlock()
	}
}

func (c *testClient) sendRaw(s string) {
	c.t.Helper()
	c.wmu.Lock()
	err := c.ws.WriteMessage(websocket.TextMessage, []byte(s))
	c.wmu.Unlock()
	if err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// call sends a command and waits for its answer.
func (c *testClient) call(method, params, session string) cdpMsg {
	c.t.Helper()
	c.mu.Lock()
	if c.nextID == 0 {
		c.nextID = 100 // test tables use small ids of their own
	}
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	if params == "" {
		params = "{}"
	}
	s := fmt.Sprintf(`{"id":%d,"method":%q,"params":%s`, id, method, params)
	if session != "" {
		s += fmt.Sprintf(`,"sessionId":%q`, session)
	}
	c.sendRaw(s + "}")
	return c.waitID(strconv.Itoa(id))
}

func (c *testClient) waitID(id string) cdpMsg {
	c.t.Helper()
	var got cdpMsg
	testkit.WaitFor(c.t, 5*time.Second, "answer to id "+id, func() bool {
		for _, raw := range c.all() {
			var m cdpMsg
			if json.Unmarshal(raw, &m) == nil && m.Method == "" && string(m.ID) == id {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

func (c *testClient) all() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]json.RawMessage(nil), c.msgs...)
}

// events returns the events received with the given method.
func (c *testClient) events(method string) []cdpMsg {
	var out []cdpMsg
	for _, raw := range c.all() {
		var m cdpMsg
		if json.Unmarshal(raw, &m) == nil && m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

func (c *testClient) closed() (bool, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done, c.closeCd
}

// startMux runs a mux in front of fb with cfg's non-zero fields and waits for it to connect.
func startMux(t *testing.T, fb *fakeBrowser, cfg Config) *Mux {
	t.Helper()
	m := runMux(t, fb, cfg)
	testkit.WaitFor(t, 20*time.Second, "mux connected to the browser", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.up != nil && len(m.pending) == 0
	})
	return m
}

// runMux runs a mux in front of fb (its endpoint, unless cfg names another) with cfg's non-zero fields.
func runMux(t *testing.T, fb *fakeBrowser, cfg Config) *Mux {
	t.Helper()
	if cfg.Upstream == "" {
		cfg.Upstream = fb.endpoint()
	}
	cfg.Token = "tok"
	if cfg.Addr == "" && cfg.Listener == nil {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.ReconnectMin == 0 {
		cfg.ReconnectMin = 10 * time.Millisecond
		cfg.ReconnectMax = 50 * time.Millisecond
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := contextWithCancel()
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return m
}

func result[T any](t *testing.T, m cdpMsg) T {
	t.Helper()
	var v T
	if m.Error != nil {
		t.Fatalf("unexpected CDP error %d %q", m.Error.Code, m.Error.Message)
	}
	if err := json.Unmarshal(m.Result, &v); err != nil {
		t.Fatalf("decode result %s: %v", m.Result, err)
	}
	return v
}

type targetsResult struct {
	TargetInfos []struct {
		TargetID string `json:"targetId"`
		Type     string `json:"type"`
	} `json:"targetInfos"`
}

func (c *testClient) createTarget(url string) string {
	c.t.Helper()
	r := result[struct {
		TargetID string `json:"targetId"`
	}](c.t, c.call("Target.createTarget", fmt.Sprintf(`{"url":%q}`, url), ""))
	return r.TargetID
}

func (c *testClient) attach(tid string) string {
	c.t.Helper()
	r := result[struct {
		SessionID string `json:"sessionId"`
	}](c.t, c.call("Target.attachToTarget", fmt.Sprintf(`{"targetId":%q,"flatten":true}`, tid), ""))
	return r.SessionID
}

func (c *testClient) targetIDs() []string {
	c.t.Helper()
	r := result[targetsResult](c.t, c.call("Target.getTargets", `{"filter":[{}]}`, ""))
	var ids []string
	for _, ti := range r.TargetInfos {
		ids = append(ids, ti.TargetID)
	}
	return ids
}
