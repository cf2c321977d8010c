//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/mux/sys/osuser"
)

// The hostile agent (SPEC §20): the tricks that walked around the checks of §5, §13 and §14, tried as an agent
// talked into misbehaving would, with nothing but its own task's capability URL (and, last, its own agent user),
// on a root manager whose stores are OS boundaries. Store Bolt is logged in (its profile holds a cookie
// database); a victim task of Acme's has a tab whose URL holds a secret. Every trick sits beside its control:
// the same probe without the trick, refused too, so what refuses the trick is the rule, not a side effect.

// Tasks of store Acme's: the hostile one, its victim, the hostile one again as its agent user's own process,
// and a well-behaved client at the end.
const (
	evilTask   = "e0e0e0e0-0000-4000-8000-0000000000e0"
	victimTask = "c1c1c1c1-0000-4000-8000-0000000000c1"
	probeTask  = "e1e1e1e1-0000-4000-8000-0000000000e1"
	goodTask   = "d1d1d1d1-0000-4000-8000-0000000000d1"
)

// What the mux's refusals say: each rule, as its CDP error names it.
const (
	ruleStrict   = "in one case only"
	ruleURL      = "a client may open only web content"
	ruleFile     = "a client may hand the browser only regular files"
	ruleStream   = "a client reads and closes only the streams the mux handed it"
	ruleTrace    = "a trace records the browser process"
	ruleSysInfo  = "it reports every process of the browser"
	ruleProxy    = "a client may not give a browser context a proxy of its own"
	rulePageOnly = "it goes only to a session of the client's own tabs"
	ruleUnknown  = "the mux forwards only the methods in its table"
	ruleOwned    = "Target owned by another client"   // SPEC §5's ownership answer
	ruleSession  = "Session with given id not found." // Chrome's own answer, for another client's session
)

// raceSeconds is how long the symlink race runs (SPEC §20).
const raceSeconds = 60

// hostile is the scene: the manager, the two stores, the victim and the hostile client.
type hostile struct {
	m       *managed
	agent   *osuser.User // store Acme's agent user
	web     *httptest.Server
	acme    api.Store
	cookies string // store Bolt's cookie database
	secret  string // in the victim's tab's URL

	victim                      *rawCDP
	victimTarget, victimSession string
	victimFile                  string // a download of the victim task's: under the home, the agent user's own

	evil          *rawCDP
	evilDownloads string
	evilSession   string // on its page with a file input
	ownSpare      string // another target of its own
	browserPID    int

	race     string // a folder of the agent user's, outside the home
	innocent string // a file of the agent user's there
	// received is every answer the hostile client got to a crafted frame.
	received []string
}

// TestHostileAgent walks SPEC §20's tricks, each beside its control, then checks that the victim's tab is
// untouched, that its URL never reached the hostile client, and that a well-behaved client still works.
func TestHostileAgent(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the hostile agent needs a root manager and real users; CI runs as root")
	}
	h := newHostile(t)
	t.Run("case and duplicate keys", h.duplicateKeys)
	t.Run("symlink race", h.symlinkRace)
	t.Run("hard link swap", h.hardLinkSwap)
	t.Run("browser-wide reaches", h.browserWide)
	t.Run("proxy", h.proxy)
	t.Run("page methods on the browser session", h.browserSession)
	t.Run("as the agent user", h.asAgentUser)
	t.Run("real clients still work", h.realClients)
	h.victimIntact(t)
	h.nothingLeaked(t)
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	a := testkit.SystemUser(t, agentUserA)
	testkit.SystemUser(t, agentUserB)
	testkit.SystemUser(t, browserUserB)
	bins := reachableBinaries(t)
	m := startManagerWith(t, bins, boundaryHome(t))
	h := &hostile{m: m, agent: a, web: aroundSite(t), secret: "victim-secret-" + randomHex(8)}
	var bolt api.Store
	for _, s := range []struct {
		dst  *api.Store
		args []string
	}{{&h.acme, []string{"Acme", "--agent-user", agentUserA}}, {&bolt, []string{"Bolt", "--agent-user", agentUserB, "--browser-user", browserUserB}}} {
		if err := json.Unmarshal([]byte(m.cli(append([]string{"store", "add"}, append(s.args, "--json")...)...)), s.dst); err != nil {
			t.Fatal(err)
		}
	}

	// Bolt logs in: its profile gets the cookie database Acme's agent is after.
	dialRaw(t, bolt.CDPWS+"/client-"+taskB).createPage(h.web.URL + "/cookie")
	h.cookies = filepath.Join(m.home, "profiles", bolt.Slug, "Default", "Cookies")
	testkit.WaitFor(t, 60*time.Second, "Bolt's cookie database on disk", func() bool {
		_, err := os.Stat(h.cookies)
		return err == nil
	})

	// The victim: a tab whose URL holds a secret, and a download of its own.
	vc := capability(t, m, h.acme, victimTask)
	h.victim = dialRaw(t, vc.CDPWS)
	h.victimTarget, h.victimSession = h.victim.createPage(h.web.URL + "/p5.html?secret=" + h.secret)
	h.victimFile = filepath.Join(vc.DownloadDir, "secret.csv")
	h.agentDir(t, vc.DownloadDir)
	h.agentFile(t, h.victimFile, "victim-download "+h.secret)

	// The hostile client discovers targets, so anything the mux let slip of the victim's would reach it.
	ec := capability(t, m, h.acme, evilTask)
	h.evilDownloads = ec.DownloadDir
	h.evil = dialRaw(t, ec.CDPWS)
	h.evil.must("Target.setDiscoverTargets", map[string]any{"discover": true}, "", nil)
	_, h.evilSession = h.evil.createPage(h.web.URL + "/upload")
	h.ownSpare, _ = h.evil.createPage("about:blank")
	h.browserPID = h.pid(t)

	parent := settledTempDir(t)
	if err := os.Chmod(parent, 0o711); err != nil {
		t.Fatal(err)
	}
	h.race = filepath.Join(parent, "race")
	h.agentDir(t, h.race)
	h.innocent = filepath.Join(h.race, "innocent.txt")
	h.agentFile(t, h.innocent, "innocent "+randomHex(4))
	return h
}

// capability is what ensure hands task's client of store s: its capability URL and downloads folder.
func capability(t *testing.T, m *managed, s api.Store, task string) api.EnsureResponse {
	t.Helper()
	resp, err := m.client.EnsureSession(context.Background(), api.EnsureRequest{Kind: api.KindStore, StoreID: s.ID,
		ClientID: task, BUName: s.Slug + "-" + task[:8], TaskID: task, Via: api.ViaCDP})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// agentDir makes dir the agent user's (0700).
func (h *hostile) agentDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := h.agent.Chown(dir); err != nil {
		t.Fatal(err)
	}
}

// agentFile writes path as the agent user's own (0600).
func (h *hostile) agentFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.agent.Chown(path); err != nil {
		t.Fatal(err)
	}
}

// pid is store Acme's browser's.
func (h *hostile) pid(t *testing.T) int {
	t.Helper()
	s, err := h.m.client.GetStore(context.Background(), h.acme.Slug)
	if err != nil || s.Browser.PID <= 0 {
		t.Fatalf("store %s: %+v, %v; want its browser running", h.acme.Slug, s, err)
	}
	return s.Browser.PID
}

// frame sends text as one WebSocket text frame, byte for byte as given ("$ID" replaced by a fresh id), and
// waits for its answer: what a Go map cannot hold, a key twice in one object.
func (c *rawCDP) frame(text string) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := c.next
	w := make(chan rawReply, 1)
	c.waiters[id] = w
	c.mu.Unlock()
	c.wmu.Lock()
	err := c.ws.WriteMessage(websocket.TextMessage, []byte(strings.ReplaceAll(text, "$ID", strconv.Itoa(id))))
	c.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case r := <-w:
		return r.result, r.err
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("no answer in 30s to %s", text)
	}
}

// fill puts the scene's names into a frame's placeholders; $ID, $SESSION and $NODE are the sender's.
func (h *hostile) fill(text string) string {
	return strings.NewReplacer("$COOKIES", h.cookies, "$INNOCENT", h.innocent, "$VICTIM_TARGET", h.victimTarget,
		"$VICTIM_SESSION", h.victimSession, "$OWN", h.ownSpare).Replace(text)
}

// send sends a crafted frame on the hostile client's page and keeps what came back.
func (h *hostile) send(t *testing.T, text string) error {
	t.Helper()
	text = strings.ReplaceAll(h.fill(text), "$SESSION", h.evilSession)
	if strings.Contains(text, "$NODE") {
		text = strings.ReplaceAll(text, "$NODE", strconv.Itoa(fileInput(h.evil, h.evilSession)))
	}
	res, err := h.evil.frame(text)
	h.received = append(h.received, string(res))
	if err != nil {
		h.received = append(h.received, err.Error())
	}
	return err
}

// fileInput is the node of the page's #f.
func fileInput(c *rawCDP, session string) int {
	var doc struct{ Root struct{ NodeID int } }
	c.must("DOM.getDocument", nil, session, &doc)
	var q struct{ NodeID int }
	c.must("DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": "#f"}, session, &q)
	return q.NodeID
}

// trick is a crafted frame and the refusal it must get: by the mux naming rule and named, or (ownership, which
// Chrome's own answers speak for) an error holding rule.
type trick struct {
	what, frame, rule, named string
}

func (k trick) check(t *testing.T, err error) {
	t.Helper()
	if k.rule == ruleOwned || k.rule == ruleSession {
		if err == nil || !strings.Contains(err.Error(), k.rule) {
			t.Errorf("%s = %v; want %q", k.what, err, k.rule)
		}
		return
	}
	wantRefused(t, k.what, err, k.rule, k.named)
}

const (
	navigateFrame = `{"id":$ID,"method":"Page.navigate","sessionId":"$SESSION","params":%s}`
	createFrame   = `{"id":$ID,"method":"Target.createTarget","params":%s}`
	filesFrame    = `{"id":$ID,"method":"DOM.setFileInputFiles","sessionId":"$SESSION","params":%s}`
	dragFrame     = `{"id":$ID,"method":"Input.dispatchDragEvent","sessionId":"$SESSION","params":{"type":"dragEnter","x":5,"y":5,"data":{"items":[],"dragOperationsMask":1,%s}}}`
	crashURL      = "chrome://inducebrowsercrashforrealz"
)

// keyTricks are SPEC §20's first class: a key the mux and Chromium could read two ways. Each is refused by the
// strict read, naming the key; the controls after them are the same probes, plainly.
func keyTricks() (tricks, controls []trick) {
	cookiesURL := "file://$COOKIES"
	nav := func(what, params, named string) trick {
		return trick{"Page.navigate " + what, fmt.Sprintf(navigateFrame, params), ruleStrict, named}
	}
	tricks = []trick{
		nav("url+URL", `{"url":"`+cookiesURL+`","URL":"about:blank"}`, `"URL"`),
		nav("URL+url", `{"URL":"about:blank","url":"`+cookiesURL+`"}`, `"url"`),
		nav("url+Url", `{"url":"`+cookiesURL+`","Url":"about:blank"}`, `"Url"`),
		nav(`url+\u0055RL`, `{"url":"`+cookiesURL+`","\u0055RL":"about:blank"}`, `"URL"`),
		nav(`url+\u0075rl`, `{"url":"`+cookiesURL+`","\u0075rl":"about:blank"}`, `"url"`),
		nav(`\u0075rl twice`, `{"\u0075rl":"about:blank","\u0075rl":"`+cookiesURL+`"}`, `"url"`),
		nav("url twice", `{"url":"about:blank","url":"`+cookiesURL+`"}`, `"url"`),
		{"params+Params", `{"id":$ID,"method":"Page.navigate","sessionId":"$SESSION","params":{"url":"about:blank"},"Params":{"url":"` + cookiesURL + `"}}`, ruleStrict, `"Params"`},
		{"method+Method", `{"id":$ID,"method":"Runtime.evaluate","Method":"Page.navigate","sessionId":"$SESSION","params":{"expression":"1","url":"` + cookiesURL + `"}}`, ruleStrict, `"Method"`},
		{"Method+method", `{"id":$ID,"Method":"Page.navigate","method":"Runtime.evaluate","sessionId":"$SESSION","params":{"expression":"1","url":"` + cookiesURL + `"}}`, ruleStrict, `"method"`},
		{"method twice", `{"id":$ID,"method":"Runtime.evaluate","method":"Page.navigate","sessionId":"$SESSION","params":{"expression":"1","url":"` + cookiesURL + `"}}`, ruleStrict, `"method"`},
		{"sessionId+sessionid", `{"id":$ID,"method":"Runtime.evaluate","sessionId":"$SESSION","sessionid":"$VICTIM_SESSION","params":{"expression":"location.href"}}`, ruleStrict, `"sessionid"`},
		{"sessionid+sessionId", `{"id":$ID,"method":"Runtime.evaluate","sessionid":"$SESSION","sessionId":"$VICTIM_SESSION","params":{"expression":"location.href"}}`, ruleStrict, `"sessionId"`},
		{"sessionId+ſessionId (long s folds to s)", `{"id":$ID,"method":"Runtime.evaluate","sessionId":"$SESSION","ſessionId":"$VICTIM_SESSION","params":{"expression":"location.href"}}`, ruleStrict, `"ſessionId"`},
		{"createTarget url+URL", fmt.Sprintf(createFrame, `{"url":"about:blank","URL":"`+crashURL+`"}`), ruleStrict, `"URL"`},
		{"createTarget URL+url", fmt.Sprintf(createFrame, `{"URL":"about:blank","url":"`+crashURL+`"}`), ruleStrict, `"url"`},
		{"createTarget url twice", fmt.Sprintf(createFrame, `{"url":"about:blank","url":"`+crashURL+`"}`), ruleStrict, `"url"`},
		{"setFileInputFiles files+Files", fmt.Sprintf(filesFrame, `{"nodeId":$NODE,"files":["$INNOCENT"],"Files":["$COOKIES"]}`), ruleStrict, `"Files"`},
		{"setFileInputFiles Files+files", fmt.Sprintf(filesFrame, `{"nodeId":$NODE,"Files":["$INNOCENT"],"files":["$COOKIES"]}`), ruleStrict, `"files"`},
		{"setFileInputFiles files twice", fmt.Sprintf(filesFrame, `{"nodeId":$NODE,"files":["$INNOCENT"],"files":["$COOKIES"]}`), ruleStrict, `"files"`},
		{"dispatchDragEvent files+Files", fmt.Sprintf(dragFrame, `"files":["$INNOCENT"],"Files":["$COOKIES"]`), ruleStrict, `"Files"`},
		// The keeper's pipe ends each message with a NUL: a second message after one would be a command of
		// the browser session's, past every rule.
		{"a NUL and a second message", `{"id":$ID,"method":"Runtime.evaluate","sessionId":"$SESSION","params":{"expression":"1"}}` +
			"\x00" + `{"id":7,"method":"Target.closeTarget","params":{"targetId":"$VICTIM_TARGET"}}`, ruleStrict, ""},
	}
	controls = []trick{
		{"Page.navigate file://", fmt.Sprintf(navigateFrame, `{"url":"`+cookiesURL+`"}`), ruleURL, cookiesURL},
		{"createTarget " + crashURL, fmt.Sprintf(createFrame, `{"url":"`+crashURL+`"}`), ruleURL, crashURL},
		{"setFileInputFiles Bolt's cookies", fmt.Sprintf(filesFrame, `{"nodeId":$NODE,"files":["$COOKIES"]}`), ruleFile, "$COOKIES"},
		{"dispatchDragEvent Bolt's cookies", fmt.Sprintf(dragFrame, `"files":["$COOKIES"]`), ruleFile, "$COOKIES"},
		{"Runtime.evaluate on the victim's session", `{"id":$ID,"method":"Runtime.evaluate","sessionId":"$VICTIM_SESSION","params":{"expression":"location.href"}}`, ruleSession, ""},
	}
	for _, method := range []string{"closeTarget", "activateTarget", "getTargetInfo", "attachToTarget"} {
		target := func(what, params, rule, named string) trick {
			return trick{"Target." + method + " " + what,
				`{"id":$ID,"method":"Target.` + method + `","params":{` + params + `,"flatten":true}}`, rule, named}
		}
		tricks = append(tricks,
			target("targetId own+TargetId victim's", `"targetId":"$OWN","TargetId":"$VICTIM_TARGET"`, ruleStrict, `"TargetId"`),
			target("targetId victim's+TargetId own", `"targetId":"$VICTIM_TARGET","TargetId":"$OWN"`, ruleStrict, `"TargetId"`),
			target("targetId twice", `"targetId":"$OWN","targetId":"$VICTIM_TARGET"`, ruleStrict, `"targetId"`))
		controls = append(controls, target("victim's targetId", `"targetId":"$VICTIM_TARGET"`, ruleOwned, ""))
	}
	return tricks, controls
}

// duplicateKeys: every trick of the first class, and its control, from the hostile client's own URL.
func (h *hostile) duplicateKeys(t *testing.T) {
	tricks, controls := keyTricks()
	for _, k := range append(tricks, controls...) {
		k.named = h.fill(k.named)
		k.check(t, h.send(t, k.frame))
	}
	// Nothing happened: the page is where it was, no cookie database was downloaded or copied for the
	// browser, the browser never crashed and the victim's tab answers.
	if v, err := h.evil.evaluate(h.evilSession, `location.href`); err != nil || !strings.Contains(string(v), "/upload") {
		t.Errorf("after the tricks the hostile page is at %s (%v); want it still at /upload", v, err)
	}
	for _, f := range testkit.Files(filepath.Join(h.m.home, "downloads")) {
		if base := filepath.Base(f); base == "Cookies" || base == "state.db" {
			t.Errorf("downloads/%s exists after the tricks; want no cookie database nor state.db there", f)
		}
	}
	if pid := h.pid(t); pid != h.browserPID {
		t.Errorf("store Acme's browser is pid %d after %s; want %d, never crashed", pid, crashURL, h.browserPID)
	}
	h.victimIntact(t)
}

// victimIntact: the victim's tab is there, where it was, and answers.
func (h *hostile) victimIntact(t *testing.T) {
	t.Helper()
	if ids := h.victim.targetIDs(false); !slices.Contains(ids, h.victimTarget) {
		t.Errorf("the victim sees its pages %v; want its tab %s still there", ids, h.victimTarget)
	}
	if v, err := h.victim.evaluate(h.victimSession, `location.href`); err != nil || !strings.Contains(string(v), h.secret) {
		t.Errorf("the victim's tab is at %s (%v); want it still at its page", v, err)
	}
}

// nothingLeaked: the victim's URL never reached the hostile client, in an answer or an event.
func (h *hostile) nothingLeaked(t *testing.T) {
	t.Helper()
	for _, r := range h.received {
		if strings.Contains(r, h.secret) {
			t.Errorf("the hostile client was answered %s; it holds the victim's URL", r)
		}
	}
	for _, e := range h.evil.Events("") {
		if strings.Contains(string(e.Params), h.secret) {
			t.Errorf("the hostile client got %s %s; it holds the victim's URL", e.Method, e.Params)
		}
	}
	all, err := h.evil.Call("Target.getTargets", nil, "")
	if err != nil || strings.Contains(string(all), h.secret) {
		t.Errorf("Target.getTargets shows the hostile client %s (%v); want only its own targets", all, err)
	}
}

// secrets are what must never be read through a file input: the victim's download, a SQLite database's header
// (Bolt's cookies, state.db).
func (h *hostile) leaks(s string) bool {
	return strings.Contains(s, h.secret) || strings.Contains(s, "SQLite format 3")
}

// symlinkRace: for raceSeconds the agent user flips a symlink, and a folder symlink on the way, between an
// innocent file and Bolt's cookies, state.db and the victim's download, while the hostile client hands each
// path, and the innocent file itself, to its file input and reads it back. A symlink is always refused, whatever
// it names at that moment; the innocent file always reads as itself; nothing secret is ever read.
func (h *hostile) symlinkRace(t *testing.T) {
	plain := filepath.Join(h.race, "plain")
	h.agentDir(t, plain)
	h.agentFile(t, filepath.Join(plain, filepath.Base(h.victimFile)), "innocent plain "+randomHex(4))
	fileLink, dirLink := filepath.Join(h.race, "link.txt"), filepath.Join(h.race, "dir")
	viaDir := filepath.Join(dirLink, filepath.Base(h.victimFile))

	// One round before the race: a symlink to the innocent file is refused as a symlink.
	h.flip(t, 0, "symlink:"+fileLink+":"+h.innocent)
	_, err := readInput(h.evil, h.evilSession, fileLink)
	wantRefused(t, "setFileInputFiles of a symlink to an innocent file", err, ruleFile, "through a symlink")

	targets := []string{h.innocent, h.cookies, h.innocent, filepath.Join(h.m.home, "state.db"), h.innocent, h.victimFile}
	var symlinks, innocent int
	h.underFlips(t, raceSeconds, []string{"symlink:" + fileLink + ":" + strings.Join(targets, ","),
		"symlink:" + dirLink + ":" + plain + "," + filepath.Dir(h.victimFile)}, func(read func(string) (string, error), fail func(string, ...any)) {
		for _, p := range []string{fileLink, viaDir} {
			if got, err := read(p); err == nil || !strings.Contains(err.Error(), "through a symlink") || !strings.Contains(err.Error(), ruleFile) {
				fail("setFileInputFiles of %s (a symlink on the way) read %q (%v); want it refused as a symlink", p, got, err)
			} else {
				symlinks++
			}
		}
		if got, err := read(h.innocent); err != nil || !strings.HasPrefix(got, "innocent ") {
			fail("setFileInputFiles of the innocent %s read %q (%v); want its own content", h.innocent, got, err)
		} else {
			innocent++
		}
	})
	t.Logf("%d symlinks refused, %d innocent reads", symlinks, innocent)
	if symlinks == 0 || innocent == 0 {
		t.Errorf("the race made %d reads of symlinks and %d of the innocent file; want both tried", symlinks, innocent)
	}
	h.uploadsInnocent(t)
}

// hardLinkSwap: a regular name outside the home, renamed over by a hard link of an innocent file and by one of
// the victim's download (under the home; the agent user may link it, the file being its own), in turn, while
// the hostile client reads the name through its file input. A hard link of a file under the home is refused by
// the home rule, and a name that changes while the mux opens and checks it is refused as changed, so every
// read is the innocent file or one of those refusals, never the victim's download.
func (h *hostile) hardLinkSwap(t *testing.T) {
	src := filepath.Join(h.race, "innocent-src.txt")
	srcContent := "innocent src " + randomHex(4)
	h.agentFile(t, src, srcContent)
	relinked := filepath.Join(h.race, "report.csv")

	// One round before the race: the hard link is refused, as the download itself is.
	h.flip(t, 0, "hardlink:"+relinked+":"+h.victimFile)
	_, err := readInput(h.evil, h.evilSession, relinked)
	wantRefused(t, "setFileInputFiles of a hard link of the victim's download", err, ruleFile, "is a hard link to")
	_, err = readInput(h.evil, h.evilSession, h.victimFile)
	wantRefused(t, "setFileInputFiles of the victim's download", err, ruleFile, "under the manager's home")

	var refused, innocent int
	h.underFlips(t, hardLinkSeconds, []string{"hardlink:" + relinked + ":" + src + "," + h.victimFile}, func(read func(string) (string, error), fail func(string, ...any)) {
		switch got, err := read(relinked); {
		case err == nil && got == srcContent:
			innocent++
		case err != nil && strings.Contains(err.Error(), ruleFile) && (strings.Contains(err.Error(), "is a hard link to") ||
			strings.Contains(err.Error(), "changed while the mux")):
			refused++
		default:
			fail("setFileInputFiles of %s (hard links swapped) read %q (%v); want the innocent file's content or a refusal", relinked, got, err)
		}
	})
	t.Logf("%d hard links refused, %d innocent reads", refused, innocent)
	h.uploadsInnocent(t)
}

// hardLinkSeconds is how long the hard link swap runs.
const hardLinkSeconds = 20

// flip runs boundaryprobe flip as the agent user (SPEC §20: the agent's own doing) and returns what it said.
func (h *hostile) flip(t *testing.T, seconds int, specs ...string) string {
	out, err := runAs(h.agent, []string{"PATH=/usr/bin:/bin"}, builtBinaries(t).probe, append([]string{"flip", strconv.Itoa(seconds)}, specs...)...)
	var r probeResult
	if jerr := json.Unmarshal(lastLine([]byte(out)), &r); jerr != nil || !r.OK {
		t.Errorf("boundaryprobe flip as %s: %v, %v: %s", h.agent.Name, err, jerr, out)
	}
	return r.Body
}

// underFlips runs round again and again for as long as the agent user flips specs (seconds); round reads
// through the hostile client's file input with read (which fails the test on anything secret) and reports a
// wrong outcome with fail (the first few are listed).
func (h *hostile) underFlips(t *testing.T, seconds int, specs []string, round func(read func(string) (string, error), fail func(string, ...any))) {
	done := make(chan string, 1)
	go func() { done <- h.flip(t, seconds, specs...) }()
	testkit.WaitFor(t, 10*time.Second, "the agent user's flips to begin", func() bool {
		for _, spec := range specs {
			if _, err := os.Lstat(strings.SplitN(spec, ":", 3)[1]); err != nil {
				return false
			}
		}
		return true
	})
	reads, bad := 0, 0
	fail := func(format string, args ...any) {
		if bad++; bad <= 5 {
			t.Errorf(format, args...)
		}
	}
	read := func(path string) (string, error) {
		reads++
		got, err := readInput(h.evil, h.evilSession, path)
		if h.leaks(got) || err != nil && h.leaks(err.Error()) {
			fail("reading %s through a file input gave %q (%v): a secret", path, got, err)
		}
		return got, err
	}
	var flipped string
	for running := true; running; {
		select {
		case flipped = <-done:
			running = false
		default:
		}
		round(read, fail)
	}
	t.Logf("%ds of flipping (%s): %d reads, %d wrong", seconds, flipped, reads, bad)
}

// uploadsInnocent: what the browser was handed are the mux's copies, the browser user's, and each holds an
// innocent file, nothing secret.
func (h *hostile) uploadsInnocent(t *testing.T) {
	t.Helper()
	br, err := osuser.Lookup(browserUser)
	if err != nil {
		t.Fatal(err)
	}
	uploads := filepath.Join(filepath.Dir(h.evilDownloads), ".uploads")
	copies := testkit.Files(uploads)
	if len(copies) == 0 {
		t.Errorf("no copies under %s; want the browser handed the mux's copies", uploads)
	}
	for _, c := range copies {
		p := filepath.Join(uploads, c)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != br.UID || fi.Mode().Perm() != 0o600 || h.leaks(string(b)) ||
			!strings.HasPrefix(string(b), "innocent ") {
			t.Errorf("the copy %s is uid %d, mode %04o, holds %q; want the browser user %s's, 0600, an innocent file's", p,
				st.Uid, fi.Mode().Perm(), b, br.Name)
			break
		}
	}
}

// browserWide: a trace, another's streams and the system's processes are out of reach; the client's own stream
// (a PDF of its own page) is its to read, and only its.
func (h *hostile) browserWide(t *testing.T) {
	for _, c := range []struct{ method, session string }{{"Tracing.start", ""}, {"Tracing.start", h.evilSession},
		{"Tracing.getCategories", ""}, {"Tracing.end", ""}, {"Tracing.requestMemoryDump", h.evilSession}} {
		_, err := h.evil.Call(c.method, map[string]any{}, c.session)
		wantRefused(t, fmt.Sprintf("%s (session %q)", c.method, c.session), err, ruleTrace, c.method)
	}
	for _, method := range []string{"SystemInfo.getProcessInfo", "SystemInfo.getInfo"} {
		_, err := h.evil.Call(method, map[string]any{}, "")
		wantRefused(t, method, err, ruleSysInfo, method)
	}
	for i := 0; i <= 20; i++ {
		handle := strconv.Itoa(i)
		for _, session := range []string{"", h.evilSession} {
			_, err := h.evil.Call("IO.read", map[string]any{"handle": handle}, session)
			wantRefused(t, fmt.Sprintf("IO.read of the guessed handle %s", handle), err, ruleStream, fmt.Sprintf("handle %q is not one of this client's streams", handle))
		}
	}

	// The control: a PDF of the client's own page, as a stream, is its to read.
	var pdf struct{ Stream string }
	h.evil.must("Page.printToPDF", map[string]any{"transferMode": "ReturnAsStream"}, h.evilSession, &pdf)
	if pdf.Stream == "" {
		t.Fatal("Page.printToPDF {transferMode: ReturnAsStream} answered no stream")
	}
	for _, method := range []string{"IO.read", "IO.close"} {
		_, err := h.victim.Call(method, map[string]any{"handle": pdf.Stream}, h.victimSession)
		wantRefused(t, "the victim's "+method+" of the hostile client's stream", err, ruleStream, pdf.Stream)
	}
	var data []byte
	for eof := false; !eof; {
		var r struct {
			Data          string
			EOF           bool
			Base64Encoded bool
		}
		h.evil.must("IO.read", map[string]any{"handle": pdf.Stream, "size": 1 << 20}, h.evilSession, &r)
		chunk := []byte(r.Data)
		if r.Base64Encoded {
			var err error
			if chunk, err = base64.StdEncoding.DecodeString(r.Data); err != nil {
				t.Fatal(err)
			}
		}
		data, eof = append(data, chunk...), r.EOF
	}
	if !strings.HasPrefix(string(data), "%PDF-") {
		t.Errorf("IO.read of its own PDF stream read %.20q; want a PDF", data)
	}
	h.evil.must("IO.close", map[string]any{"handle": pdf.Stream}, h.evilSession, nil)
	_, err := h.evil.Call("IO.read", map[string]any{"handle": pdf.Stream}, h.evilSession)
	wantRefused(t, "IO.read of its stream once closed", err, ruleStream, pdf.Stream)
}

// proxy: no browser context with a proxy of the client's own; one without is the client's (the control: the
// rule is the proxy, not the context), and its tab goes out as the store does. A trap proxy counts whatever
// reaches it.
func (h *hostile) proxy(t *testing.T) {
	var trapped atomic.Int32
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trapped.Add(1)
		fmt.Fprint(w, "<!doctype html><title>trapped</title>")
	}))
	defer trap.Close()
	for _, params := range []map[string]any{{"proxyServer": trap.URL}, {"proxyBypassList": "*"},
		{"proxyServer": trap.URL, "proxyBypassList": "<-loopback>"}} {
		_, err := h.evil.Call("Target.createBrowserContext", params, "")
		named := "proxyServer"
		if _, ok := params[named]; !ok {
			named = "proxyBypassList"
		}
		wantRefused(t, fmt.Sprintf("Target.createBrowserContext %v", params), err, ruleProxy, named)
	}

	// A context's tab loads the web, and a name only a proxy could resolve never reaches the trap. Chrome reads
	// keys exactly: "ProxyServer" is no proxy of Chrome's, whether the mux refuses it or not.
	tryContext := func(what string, params map[string]any) {
		t.Helper()
		var bc struct{ BrowserContextID string }
		res, err := h.evil.Call("Target.createBrowserContext", params, "")
		if err == nil {
			err = json.Unmarshal(res, &bc)
		}
		if err != nil {
			if len(params) == 0 {
				t.Errorf("Target.createBrowserContext {}: %v; want a context of the client's own", err)
			}
			return
		}
		defer h.evil.Call("Target.disposeBrowserContext", map[string]any{"browserContextId": bc.BrowserContextID}, "")
		var ct struct{ TargetID string }
		h.evil.must("Target.createTarget", map[string]any{"url": h.web.URL + "/in-context", "browserContextId": bc.BrowserContextID}, "", &ct)
		var at struct{ SessionID string }
		h.evil.must("Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true}, "", &at)
		testkit.WaitFor(t, 15*time.Second, "the context's tab ("+what+") to load the web", func() bool {
			v, err := h.evil.evaluate(at.SessionID, `document.readyState === "complete" && document.body.innerText`)
			return err == nil && strings.Contains(string(v), "/in-context")
		})
		h.evil.must("Page.navigate", map[string]any{"url": "http://proxy-check.invalid/"}, at.SessionID, nil)
		testkit.WaitFor(t, 15*time.Second, "the context's tab ("+what+") to fail a name no proxy resolves", func() bool {
			v, err := h.evil.evaluate(at.SessionID, `location.href`)
			return err == nil && strings.Contains(string(v), "chrome-error://")
		})
	}
	tryContext("no proxy", map[string]any{})
	tryContext("ProxyServer", map[string]any{"ProxyServer": trap.URL})
	if n := trapped.Load(); n != 0 {
		t.Errorf("the trap proxy was reached %d times; want never", n)
	}
}

// browserSession: a page's methods are the client's on its own tabs' sessions only, and a method the table does
// not know is refused; the same calls on the client's own session pass (the control).
func (h *hostile) browserSession(t *testing.T) {
	for _, c := range []struct {
		method string
		params map[string]any
	}{{"Network.enable", map[string]any{}}, {"Runtime.evaluate", map[string]any{"expression": "location.href"}},
		{"Page.navigate", map[string]any{"url": h.web.URL + "/browser-session"}},
		{"DOM.setFileInputFiles", map[string]any{"nodeId": 1, "files": []string{h.innocent}}}} {
		_, err := h.evil.Call(c.method, c.params, "")
		wantRefused(t, c.method+" on the browser session", err, rulePageOnly, c.method)
	}
	for _, method := range []string{"Foo.bar", "Nope", "Tethering.bind", "Browser.crash", "Target.openDevTools"} {
		_, err := h.evil.Call(method, map[string]any{"port": 9222, "targetId": h.ownSpare}, "")
		wantRefused(t, method, err, "is refused by the mux", method)
	}
	_, err := h.evil.Call("Foo.bar", map[string]any{}, h.evilSession)
	wantRefused(t, "Foo.bar on the client's own session", err, ruleUnknown, "Foo.bar")
	h.evil.must("Network.enable", nil, h.evilSession, nil)
	if v, err := h.evil.evaluate(h.evilSession, `location.href`); err != nil || !strings.Contains(string(v), "/upload") {
		t.Errorf("Runtime.evaluate on its own session = %s, %v; want its page's URL", v, err)
	}
}

// asAgentUser: the first class again from the agent user's own process (boundaryprobe raw, on a capability URL
// of its own task), beside its controls: the plain file:// URL and Bolt's cookies plainly, refused; an innocent
// file of its own, accepted.
func (h *hostile) asAgentUser(t *testing.T) {
	bins := builtBinaries(t)
	url := capability(t, h.m, h.acme, probeTask).CDPWS
	tricks, controls := keyTricks()
	pick := func(ks []trick, what string) trick {
		for _, k := range ks {
			if k.what == what {
				return k
			}
		}
		t.Fatalf("no trick %q", what)
		return trick{}
	}
	accepted := trick{"setFileInputFiles of its own file", fmt.Sprintf(filesFrame, `{"nodeId":$NODE,"files":["$INNOCENT"]}`), "", ""}
	for _, k := range []trick{pick(tricks, "Page.navigate url+URL"), pick(tricks, "setFileInputFiles files+Files"),
		pick(controls, "Page.navigate file://"), pick(controls, "setFileInputFiles Bolt's cookies"), accepted} {
		out, err := runAs(h.agent, []string{"PATH=/usr/bin:/bin"}, bins.probe, "raw", url, h.fill(k.frame))
		var r probeResult
		if jerr := json.Unmarshal(lastLine([]byte(out)), &r); jerr != nil || r.Status != 0 {
			t.Fatalf("boundaryprobe raw as %s: %v, %v: %s", h.agent.Name, err, jerr, out)
		}
		if h.leaks(r.Body) {
			t.Errorf("%s as %s was answered %s: a secret", k.what, h.agent.Name, r.Body)
		}
		if k.rule == "" {
			if !r.OK {
				t.Errorf("%s as %s: %+v; want it accepted", k.what, h.agent.Name, r)
			}
			continue
		}
		var refused error
		if !r.OK {
			refused = errors.New(r.Error)
		}
		k.named = h.fill(k.named)
		k.what += " as " + h.agent.Name
		k.check(t, refused)
	}
}

// realClients: after all that, a browser-use-like client of the same store connects and works through the
// table (SPEC §5's connect-time traffic), seeing only its own page.
func (h *hostile) realClients(t *testing.T) {
	c := dialRaw(t, capability(t, h.m, h.acme, goodTask).CDPWS)
	for range 2 {
		c.must("Target.getTargets", nil, "", nil)
	}
	var ct struct{ TargetID string }
	c.must("Target.createTarget", map[string]any{"url": "about:blank", "background": true}, "", &ct)
	var at struct{ SessionID string }
	c.must("Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true}, "", &at)
	for _, d := range []string{"Page", "DOM", "Runtime", "Network"} {
		c.must(d+".enable", nil, at.SessionID, nil)
	}
	c.must("Page.navigate", map[string]any{"url": h.web.URL + "/good-page"}, at.SessionID, nil)
	testkit.WaitFor(t, 15*time.Second, "the well-behaved client's page to load", func() bool {
		v, err := c.evaluate(at.SessionID, `document.readyState === "complete" && document.body.innerText`)
		return err == nil && strings.Contains(string(v), "/good-page")
	})
	if ids := c.targetIDs(false); len(ids) != 1 || ids[0] != ct.TargetID {
		t.Errorf("the well-behaved client sees pages %v; want only its own %s", ids, ct.TargetID)
	}
}
