//go:build integration

package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/mux"
)

// captchaPage is an agent's page that a person must click: a button at fixed CSS pixels whose click
// retitles the page and logs to its console (the agent sees that in its events).
const captchaPage = `<!doctype html><title>Prove you are human</title>
<style>body{margin:0;background:rgb(240,200,40);font:16px sans-serif}
#ok{position:absolute;left:60px;top:60px;width:240px;height:80px;font-size:20px}</style>
<button id="ok" onclick="document.title='Clicked by a person'; console.log('clicked by a person')">I am human</button>`

// heldErr reports whether err is the mux's refusal of a command on a tab a person holds.
func heldErr(err error) bool {
	var ce *cdpError
	return errors.As(err, &ce) && ce.Code == -32000 && ce.Message == mux.HeldMessage
}

func TestWebUITakeover(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	m.cli("store", "add", "Acme Shop")
	m.cli("browser", "start", "acme-shop")
	m.cli("task", "set", taskA, "--store", "acme-shop", "--status", "running")
	m.cli("task", "set", taskB, "--store", "acme-shop", "--status", "running")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/b" {
			fmt.Fprint(w, "<!doctype html><title>B's page</title>")
			return
		}
		fmt.Fprint(w, captchaPage)
	}))
	t.Cleanup(site.Close)

	a := dialRaw(t, m.storeWS("acme-shop", taskA))
	a.must("Target.setDiscoverTargets", map[string]any{"discover": true}, "", nil)
	ta, sa := a.createPage(site.URL + "/captcha")
	a.must("Runtime.enable", nil, sa, nil)
	b := dialRaw(t, m.storeWS("acme-shop", taskB))
	_, sb := b.createPage(site.URL + "/b")

	login := uiLogin(t, m)
	page := startNodeScript(t, "ui_pages.js", login.URL)
	page.expect("ready")
	page.send("tab /store/acme-shop/tab/" + ta + " 240,200,40")
	if got := rgbOf(page.expect("tab")["colour"]); !near(got, [3]int{240, 200, 40}) {
		t.Fatalf("the live view of A's tab shows %v", got)
	}
	page.send("hold")
	held := page.expect("hold")
	if held["ok"] != true {
		t.Fatalf("Take over did not show the tab as taken over: %v", held["text"])
	}
	// It tells the truth: the agent reads what the person types in its tab; a human tab is the place for
	// a password.
	for _, want := range []string{"The agent can read what you type in this tab", "password or a one-time code",
		"human tab", "no agent sees it", "Open this page in a human tab"} {
		if !strings.Contains(held["text"].(string), want) {
			t.Errorf("the taken-over tab page says %q; want it to say %q", held["text"], want)
		}
	}
	var st api.Status
	if err := json.Unmarshal([]byte(m.cli("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if b := st.Browsers[0]; b.Slug != "acme-shop" || b.Held != 1 {
		t.Errorf("status --json says %+v; want acme-shop with 1 tab taken over", st.Browsers)
	}

	// While held: A's commands on the tab are refused with the rule, nothing else changes.
	if _, err := a.evaluate(sa, "1"); !heldErr(err) {
		t.Fatalf("A's Runtime.evaluate on its held tab: %v; want -32000 %q", err, mux.HeldMessage)
	}
	if _, err := a.Call("Target.closeTarget", map[string]any{"targetId": ta}, ""); !heldErr(err) {
		t.Fatalf("A's closeTarget of its held tab: %v; want the hold's refusal", err)
	}
	if _, err := b.evaluate(sb, "1"); err != nil {
		t.Fatalf("B's command on its own tab while A's is held: %v", err)
	}
	// The person's click reaches the page, and A sees what it did. B's tab was created last, so A's is
	// behind it in their window: taking over brought it to the front.
	page.send("click 180 100")
	if c := page.expect("clicked"); c["note"] != "" {
		t.Fatalf("the click in the live view was refused: %v", c["note"])
	}
	testkit.WaitFor(t, 10*time.Second, "A's events to show the person's click", func() bool {
		for _, e := range a.Events("Runtime.consoleAPICalled") {
			if strings.Contains(string(e.Params), "clicked by a person") {
				return true
			}
		}
		return false
	})
	shootAtBothWidths(t, page, "tab-takeover", "taken-over tab page")

	page.send("release")
	if r := page.expect("release"); r["ok"] != true {
		t.Fatalf("Release did not give the tab back: %v", r["text"])
	}
	if res, err := a.evaluate(sa, "document.title"); err != nil || !strings.Contains(string(res), "Clicked by a person") {
		t.Fatalf("A's command after Release: %s %v", res, err)
	}

	// A holder that leaves keeps the tab for the grace (30 s), then it is the agent's again.
	page.send("hold")
	page.expect("hold")
	page.send("leave")
	page.expect("left")
	if _, err := a.evaluate(sa, "1"); !heldErr(err) {
		t.Fatalf("right after the holder left: %v; want the hold kept for its grace", err)
	}
	left := time.Now()
	testkit.WaitFor(t, mux.DefaultHoldGrace+15*time.Second, "the hold to end after the holder's grace", func() bool {
		_, err := a.evaluate(sa, "1")
		return err == nil
	})
	if d := time.Since(left); d < mux.DefaultHoldGrace-5*time.Second {
		t.Errorf("the hold ended %v after the holder left; want about %v", d, mux.DefaultHoldGrace)
	}

	// The takeover banner's button opens the page in a human tab, which no agent sees.
	page.send("tab /store/acme-shop/tab/" + ta + " 240,200,40")
	page.expect("tab")
	page.send("hold")
	page.expect("hold")
	page.send("open-human")
	human := page.expect("human")
	tab, ok := strings.CutPrefix(human["url"].(string), "http://"+m.uiAddr+"/store/acme-shop/tab/")
	if !ok || tab == ta || !strings.Contains(human["text"].(string), "No agent sees this tab") ||
		human["address"] != site.URL+"/captcha" {
		t.Fatalf("Open this page in a human tab ended on %v (address %v): %q; want a human tab of the same page", human["url"], human["address"], human["text"])
	}
	if ids := a.targetIDs(true); slices.Contains(ids, tab) {
		t.Errorf("the agent's getTargets lists the human tab %s: %q", tab, ids)
	}
	page.send("close")
	page.expect("closed")
}
