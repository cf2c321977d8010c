package mux

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

// timelineRecorder is a Hooks.Timeline that keeps every step.
type timelineRecorder struct {
	mu sync.Mutex
	// mu guards the field below.
	steps []TimelineEvent
}

func (r *timelineRecorder) add(ev TimelineEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, ev)
}

func (r *timelineRecorder) all() []TimelineEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]TimelineEvent(nil), r.steps...)
}

// of returns tab's steps as lines, a navigation announced without a title and followed by the same URL
// with its title folded into the latter (whether Chrome knew the title at the navigation is its business).
func (r *timelineRecorder) of(tab string) []string {
	var steps []TimelineEvent
	for _, ev := range r.all() {
		if ev.Tab == tab {
			steps = append(steps, ev)
		}
	}
	var out []string
	for i, ev := range steps {
		if ev.Kind == TabNavigated && ev.Title == "" && i+1 < len(steps) && steps[i+1].Kind == TabNavigated && steps[i+1].URL == ev.URL {
			continue
		}
		out = append(out, stepLine(ev))
	}
	return out
}

func stepLine(ev TimelineEvent) string {
	switch ev.Kind {
	case HoldTaken, HoldReleased:
		return fmt.Sprintf("%s %s by=%s why=%q", ev.Client, ev.Kind, ev.By, ev.Why)
	case TabNavigated:
		return fmt.Sprintf("%s %s %s %q", ev.Client, ev.Kind, ev.URL, ev.Title)
	default:
		return fmt.Sprintf("%s %s %s", ev.Client, ev.Kind, ev.URL)
	}
}

// waitStep waits for tab's steps to end with want.
func (r *timelineRecorder) waitStep(t *testing.T, tab, want string) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "step "+want, func() bool {
		s := r.of(tab)
		return len(s) > 0 && s[len(s)-1] == want
	})
}

// titledPages serves pages whose documents set their titles: at once, or (/late) after they loaded.
func titledPages(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/late":
			fmt.Fprint(w, `<p>late</p><script>setTimeout(() => { document.title = "Late title" }, 300)</script>`)
		case "/untitled":
			fmt.Fprint(w, `<p>no title</p>`)
		default:
			fmt.Fprintf(w, `<title>Page %s</title><p>hello</p>`, strings.TrimPrefix(r.URL.Path, "/"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The steps of a client's page in a real Chromium: created, navigated (each URL, then its title), taken
// over by a person and given back, closed; another client's page is its own, a human tab nobody's.
func TestTimelineSteps(t *testing.T) {
	endpoint := startChromium(t)
	srv := titledPages(t)
	m, rec := startTimelineMux(t, nil, Config{Upstream: endpoint})
	ctx := testCtx(t)

	a := newClient(t, m, "task-a")
	tab := a.createTarget("about:blank")
	s := a.attach(tab)
	rec.waitStep(t, tab, "task-a tab_created about:blank")
	result[struct{}](t, a.call("Page.navigate", fmt.Sprintf(`{"url":%q}`, srv.URL+"/one"), s))
	rec.waitStep(t, tab, fmt.Sprintf(`task-a tab_navigated %s/one "Page one"`, srv.URL))

	v, err := m.op.View(ctx, tab, ViewOptions{})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if err := v.Hold("alice"); err != nil {
		t.Fatalf("Hold: %v", err)
	}
	rec.waitStep(t, tab, `task-a hold_taken by=alice why=""`)
	v.Release()
	rec.waitStep(t, tab, `task-a hold_released by=alice why=""`)
	v.Close()

	result[struct{}](t, a.call("Page.navigate", fmt.Sprintf(`{"url":%q}`, srv.URL+"/late"), s))
	rec.waitStep(t, tab, fmt.Sprintf(`task-a tab_navigated %s/late "Late title"`, srv.URL))
	result[struct{}](t, a.call("Page.navigate", fmt.Sprintf(`{"url":%q}`, srv.URL+"/untitled"), s))
	rec.waitStep(t, tab, fmt.Sprintf(`task-a tab_navigated %s/untitled ""`, srv.URL))
	result[struct{}](t, a.call("Target.closeTarget", fmt.Sprintf(`{"targetId":%q}`, tab), ""))
	rec.waitStep(t, tab, "task-a tab_closed "+srv.URL+"/untitled")

	human, err := m.op.NewHumanTab(ctx, srv.URL+"/human")
	if err != nil {
		t.Fatalf("NewHumanTab: %v", err)
	}
	b := newClient(t, m, "task-b")
	other := b.createTarget(srv.URL + "/two")
	rec.waitStep(t, other, fmt.Sprintf(`task-b tab_navigated %s/two "Page two"`, srv.URL))

	want := []string{
		"task-a tab_created about:blank",
		fmt.Sprintf(`task-a tab_navigated %s/one "Page one"`, srv.URL),
		`task-a hold_taken by=alice why=""`,
		`task-a hold_released by=alice why=""`,
		fmt.Sprintf(`task-a tab_navigated %s/late "Late title"`, srv.URL),
		fmt.Sprintf(`task-a tab_navigated %s/untitled ""`, srv.URL),
		"task-a tab_closed " + srv.URL + "/untitled",
	}
	if got := rec.of(tab); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("steps of task-a's tab:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantOther := []string{
		"task-b tab_created " + srv.URL + "/two",
		fmt.Sprintf(`task-b tab_navigated %s/two "Page two"`, srv.URL),
	}
	if got := rec.of(other); strings.Join(got, "\n") != strings.Join(wantOther, "\n") {
		t.Errorf("steps of task-b's tab:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantOther, "\n"))
	}
	var last time.Time
	for _, ev := range rec.all() {
		t.Logf("step %s %s", ev.Tab, stepLine(ev))
		switch {
		case ev.Tab == human:
			t.Errorf("a step of the human tab: %s", stepLine(ev))
		case ev.Tab != tab && ev.Tab != other:
			t.Errorf("a step of a tab no client made: %s %s", ev.Tab, stepLine(ev))
		case ev.Client == HumanClient:
			t.Errorf("a step for the human client: %s", stepLine(ev))
		}
		if ev.At.Before(last) {
			t.Errorf("step %s at %v, before the step ahead of it (%v)", stepLine(ev), ev.At, last)
		}
		last = ev.At
	}
}

func TestDocumentTitle(t *testing.T) {
	tests := []struct {
		url, title, want string
	}{
		{"about:blank", "about:blank", ""},
		{"http://127.0.0.1:4242/", "127.0.0.1:4242", ""},
		{"http://127.0.0.1:4242/p?q=1#x", "127.0.0.1:4242/p?q=1#x", ""},
		{"http://localhost:4242/a/", "localhost:4242/a/", ""},
		{"data:text/html,<p>hi", "data:text/html,<p>hi", ""},
		{"http://127.0.0.1:4242/", "", ""},
		{"http://127.0.0.1:4242/t", "Titled", "Titled"},
		{"https://shop.example/login", "Log in", "Log in"},
	}
	for _, tt := range tests {
		if got := documentTitle(tt.url, tt.title); got != tt.want {
			t.Errorf("documentTitle(%q, %q) = %q; want %q", tt.url, tt.title, got, tt.want)
		}
	}
}

// startTimelineMux is startMux with a timelineRecorder as Hooks.Timeline.
func startTimelineMux(t *testing.T, fb *fakeBrowser, cfg Config) (*Mux, *timelineRecorder) {
	t.Helper()
	rec := &timelineRecorder{}
	cfg.Hooks.Timeline = rec.add
	return startMux(t, fb, cfg), rec
}

// The steps of pages whose lives do not start or end with their client's create and close: adopted after a
// manager restart, closed by the end of a grace period, kept open for nobody, titled while nobody asks.
func TestTimelineLifetimes(t *testing.T) {
	t.Run("adopted", func(t *testing.T) {
		fb := newFakeBrowser(t)
		p1 := fb.addPage("https://task.example/", "")
		m, rec := startTimelineMux(t, fb, Config{Ownership: map[string][]string{"task1": {p1, "GONE"}}})
		c := newClient(t, m, "task1")
		s := c.attach(p1)
		result[struct{}](t, c.call("Page.navigate", `{"url":"https://next.example/"}`, s))
		rec.waitStep(t, p1, `task1 tab_navigated https://next.example/ ""`)
		if got := rec.of(p1); len(got) != 1 {
			t.Errorf("steps of the adopted tab = %q; want only its navigation (it was created before the mux ran)", got)
		}
		if got := rec.of("GONE"); !slices.Equal(got, []string{"task1 tab_closed "}) {
			t.Errorf("steps of an adopted tab the browser no longer has = %q; want its close", got)
		}
	})
	t.Run("grace over", func(t *testing.T) {
		m, rec := startTimelineMux(t, newFakeBrowser(t), Config{Grace: Off})
		c := newClient(t, m, "g")
		tab := c.createTarget("https://g.example/")
		c.ws.Close()
		rec.waitStep(t, tab, "g tab_closed https://g.example/")
		want := []string{"g tab_created https://g.example/", `g tab_navigated https://g.example/ ""`, "g tab_closed https://g.example/"}
		if got := rec.of(tab); !slices.Equal(got, want) {
			t.Errorf("steps = %q; want %q", got, want)
		}
	})
	t.Run("kept last page", func(t *testing.T) {
		fb := newFakeBrowser(t)
		m, rec := startTimelineMux(t, fb, Config{KeepLastPage: true})
		c := newClient(t, m, "c")
		only := c.createTarget("about:blank")
		result[struct{}](t, c.call("Browser.close", "", ""))
		rec.waitStep(t, only, "c tab_closed about:blank")
		if !fb.hasTarget(only) {
			t.Fatal("the browser's last page was closed")
		}
	})
	t.Run("title set later", func(t *testing.T) {
		fb := newFakeBrowser(t)
		m, rec := startTimelineMux(t, fb, Config{})
		c := newClient(t, m, "c")
		tab := c.createTarget("https://shop.example/")
		rec.waitStep(t, tab, `c tab_navigated https://shop.example/ ""`)
		fb.setTitle(tab, "Shop") // Chrome announces nothing: the timeline reads it
		rec.waitStep(t, tab, `c tab_navigated https://shop.example/ "Shop"`)
	})
}
