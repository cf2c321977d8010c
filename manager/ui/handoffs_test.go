package ui

import (
	"bufio"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/manager/api"
)

// handoffUI is storeUI with one pending handoff of the store's task, asked 5 minutes ago, waiting 15.
func handoffUI(t *testing.T) *uiUnderTest {
	t.Helper()
	u, _ := storeUI(t)
	now := u.clock.Now()
	u.src.set(func(st *api.Status) {
		st.Handoffs = []api.Handoff{{ID: "3f9a2c1b0d4e", Status: api.HandoffPending, Store: "shop", StoreID: "S1",
			TaskID: task, ClientID: task + "-w2", BUName: "shop-01234567-w2", Reason: "Solve the <captcha> on the sign-in page",
			CreatedAt: now.Add(-5 * time.Minute), Deadline: now.Add(10 * time.Minute)}}
	})
	return u
}

func TestOverviewShowsPendingHandoffsFirst(t *testing.T) {
	u := handoffUI(t)
	cookie := u.login(t)
	resp := u.do(t, "GET", "/", map[string]string{"Cookie": cookie, "Accept": "text/html"})
	page := body(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d:\n%s", resp.StatusCode, page)
	}
	for _, want := range []string{
		`<section id="handoffs-section" class="handoffs">`,
		`<article class="handoff" id="handoff-3f9a2c1b0d4e" data-id="3f9a2c1b0d4e">`,
		"Solve the &lt;captcha&gt; on the sign-in page", // escaped: the reason is the agent's text
		`href="store/shop"`, "5 min ago", "10 min left",
		// The tabs of the task's clients (its worker slot asked): the main client's page, not its worker.
		`<a href="store/shop/tab/T1" title="Orders"><bdi>Orders</bdi></a>`,
		`action="handoffs/3f9a2c1b0d4e/answer"`, `name="status" value="done"`, `name="status" value="cant_help"`,
		`name="note"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	if strings.Contains(page, "/store/shop/tab/H1") || strings.Contains(page, "/store/shop/tab/W1") {
		t.Errorf("the handoff lists a tab that is not its task's page (the human tab H1, the worker W1)")
	}
	if h, b := strings.Index(page, `id="handoffs-section"`), strings.Index(page, `id="browsers-section"`); h < 0 || h > b {
		t.Errorf("the handoffs come at %d, the stores at %d; want the handoffs first", h, b)
	}

	// The live stream carries the same card, drawn by the same template, and the count in the title.
	req, _ := http.NewRequest("GET", u.hs.URL+u.scoped(cookie, "/live/overview"), nil)
	req.Header.Set("Cookie", cookie)
	stream, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	parts := readEvent(t, bufio.NewReader(stream.Body), "parts")
	card := page[strings.Index(page, `<article class="handoff"`):]
	card = card[:strings.Index(card, "</article>")+len("</article>")]
	if strings.Count(parts, `<article class="handoff"`) != 1 || !strings.Contains(parts, card) ||
		!strings.Contains(parts, `<title id="doc-title">(1) Overview · vibe-browser</title>`) {
		t.Errorf("the live overview's parts = %s; want the page's one card as is, and the count in the title", parts)
	}
	u.src.set(func(st *api.Status) { st.Handoffs = nil })
	page = body(t, u.do(t, "GET", "/", map[string]string{"Cookie": cookie, "Accept": "text/html"}))
	if !strings.Contains(page, `<section id="handoffs-section" class="handoffs" hidden>`) {
		t.Errorf("with no handoff the section is not hidden")
	}
}

func TestHandoffOfAStoppedBrowserSaysWhere(t *testing.T) {
	u := handoffUI(t)
	u.src.set(func(st *api.Status) { st.Handoffs[0].Store, st.Handoffs[0].StoreID = "web", "" })
	cookie := u.login(t)
	page := body(t, u.do(t, "GET", "/", map[string]string{"Cookie": cookie, "Accept": "text/html"}))
	if !strings.Contains(page, "The browser is not running: open the store page to start it.") || !strings.Contains(page, `href="store/web"`) {
		t.Errorf("a handoff of the stopped web browser does not say how to reach it:\n%s", page)
	}
}

func TestAnswerAHandoff(t *testing.T) {
	tests := []struct {
		name, form, origin string
		status             int
		location, answer   string
	}{
		{"done with a note", "status=done&note=code+123456", "own", http.StatusSeeOther,
			"/?answered=done", "3f9a2c1b0d4e done code 123456"},
		{"can't help", "status=cant_help&note=", "own", http.StatusSeeOther,
			"/?answered=cant_help", "3f9a2c1b0d4e cant_help "},
		{"another site's form", "status=done", "http://evil.example", http.StatusForbidden, "", ""},
		{"no origin", "status=done", "", http.StatusForbidden, "", ""},
		// Over plain HTTP to a non-loopback address: Origin null, no Fetch Metadata, and the form's token
		// (TOKEN: the session's), which the guard reads without taking the note from the handler.
		{"over plain HTTP elsewhere, with the token", "status=done&note=code+123456&" + formTokenField + "=TOKEN", "null",
			http.StatusSeeOther, "/?answered=done", "3f9a2c1b0d4e done code 123456"},
		{"over plain HTTP elsewhere, without the token", "status=done&note=code+123456", "null", http.StatusForbidden, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := handoffUI(t)
			cookie := u.login(t)
			origin := tt.origin
			if origin == "own" {
				origin = "http://" + u.host
			}
			form := strings.ReplaceAll(tt.form, "TOKEN", u.token(t, cookie))
			resp := u.post(t, "/handoffs/3f9a2c1b0d4e/answer", form, cookie, origin)
			body(t, resp)
			location := tt.location
			if location != "" {
				location = u.scoped(cookie, location) // the session's own overview
			}
			if resp.StatusCode != tt.status || resp.Header.Get("Location") != location {
				t.Errorf("POST answer = %d to %q; want %d to %q", resp.StatusCode, resp.Header.Get("Location"), tt.status, location)
			}
			var want []string
			if tt.answer != "" {
				want = []string{tt.answer}
			}
			if got := u.src.answers; strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("AnswerHandoff calls %q; want %q", got, want)
			}
		})
	}
	u := handoffUI(t)
	cookie := u.login(t)
	body(t, u.post(t, "/handoffs/3f9a2c1b0d4e/answer", "status=done", cookie, "http://"+u.host))
	page := body(t, u.do(t, "GET", "/?answered=done", map[string]string{"Cookie": cookie, "Accept": "text/html"}))
	if !strings.Contains(page, `<p id="answered" class="banner ok">`) || !strings.Contains(page, "handoff 3f9a2c1b0d4e") {
		t.Errorf("after an answer the overview does not confirm it")
	}
	u.src.mu.Lock()
	u.src.answerErr = errors.New("handoff 3f9a2c1b0d4e is no longer pending: the agent stopped waiting for it")
	u.src.mu.Unlock()
	resp := u.post(t, "/handoffs/3f9a2c1b0d4e/answer", "status=done", cookie, "http://"+u.host)
	if b := body(t, resp); resp.StatusCode != http.StatusConflict || !strings.Contains(b, "stopped waiting") {
		t.Errorf("a late answer = %d %q; want 409 with the manager's words", resp.StatusCode, b)
	}
}

// post sends a form the way a browser does, with the session cookie and Origin.
func (u *uiUnderTest) post(t *testing.T, path, form, cookie, origin string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", u.hs.URL+u.scoped(cookie, path), strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", cookie)
	req.Header.Set("Accept", "text/html")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Open handoffs are grouped by task, the group with the newest request first and in each group its newest
// request first: a task that asks again and again keeps one card's place (issue 37).
func TestHandoffGroups(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	row := func(id, store, task string, min int) handoffRow {
		r := handoffRow{ID: id, Store: store, asked: at.Add(time.Duration(min) * time.Minute)}
		if task != "" {
			r.TaskHref = taskHref(task)
		}
		return r
	}
	rows := []handoffRow{
		row("a1", "shop-a", "flood", 1), row("b1", "shop-b", "victim", 2), row("a2", "shop-a", "flood", 3),
		row("a3", "shop-a", "flood", 4), row("n1", "shop-b", "", 5), row("n2", "shop-b", "", 0),
		row("c1", "shop-c", "flood", 6), // the same task id on another store is another task
	}
	var got []string
	for _, g := range handoffGroups(rows) {
		ids := g.Newest.ID
		for _, e := range g.Earlier {
			ids += "," + e.ID
		}
		got = append(got, ids+" ("+g.More+")")
	}
	want := []string{"c1 ()", "n1 ()", "a3,a2,a1 (2 earlier requests of this task)", "b1 ()", "n2 ()"}
	if !slices.Equal(got, want) {
		t.Errorf("handoffGroups = %q; want %q", got, want)
	}
}
