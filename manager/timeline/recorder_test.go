package timeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/mux"
	"vibebrowser/state"
)

const task = "a1b2c3d4-0000-4000-8000-000000000001"

// pictures is a browser whose pages show what the test paints; each paint or touch moves the tab (its
// TabInfo.Moves), and it counts the captures.
type pictures struct {
	mu       sync.Mutex
	colour   map[string]color.RGBA
	moves    map[string]uint64
	captures int
	secrets  []string
}

func (p *pictures) ClientTabs(client string) []mux.TabInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	if client != task {
		return []mux.TabInfo{{ID: "X", Type: "page", Owner: client}}
	}
	var tabs []mux.TabInfo
	for _, id := range []string{"T1", "T2"} {
		if _, ok := p.colour[id]; ok {
			tabs = append(tabs, mux.TabInfo{ID: id, Type: "page", URL: "https://shop.example/" + id, Owner: task, Moves: p.moves[id]})
		}
	}
	return tabs
}

func (p *pictures) Thumbnail(_ context.Context, id string, _, _ int) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.captures++
	img := image.NewRGBA(image.Rect(0, 0, 64, 40))
	for i := range img.Pix {
		img.Pix[i] = []uint8{p.colour[id].R, p.colour[id].G, p.colour[id].B, 255}[i%4]
	}
	var b bytes.Buffer
	err := jpeg.Encode(&b, img, nil)
	return b.Bytes(), err
}

func (p *pictures) PasswordTexts(context.Context, string) []string { return p.secrets }

func (p *pictures) paint(id string, c color.RGBA) {
	p.mu.Lock()
	p.colour[id] = c
	p.mu.Unlock()
	p.touch(id)
}

// touch moves tab id without changing its pixels (a command of its owner that changed nothing on screen).
func (p *pictures) touch(id string) {
	p.mu.Lock()
	if p.moves == nil {
		p.moves = map[string]uint64{}
	}
	p.moves[id]++
	p.mu.Unlock()
}

func (p *pictures) captured() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.captures
}

// recorder is a recorder on a fresh state database with a clock the test moves.
func recorder(t *testing.T, maxBytes int64) (*Recorder, *state.DB, *time.Time) {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := New(Config{DB: db, Dir: filepath.Join(t.TempDir(), "timeline"), MaxBytes: maxBytes, Keep: 30 * 24 * time.Hour,
		Log: zerolog.Nop(), Now: func() time.Time { return now }})
	return r, db, &now
}

var web = Where{Key: api.WebKey, Slug: api.WebKey, Mode: api.TimelineFull}

func call(r *Recorder, b Browser, code string) {
	r.Call(web, task, api.CallReport{Client: task, Code: code, Stdout: "printed " + code, Outcome: api.CallOK}, b)
	r.work.Wait() // the call's recording
}

func kinds(t *testing.T, r *Recorder) string {
	t.Helper()
	es, err := r.Entries(context.Background(), task, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Kind)
	}
	return strings.Join(out, " ")
}

// A tab is captured after a call only when it moved since its last shot, and a capture is kept only when
// its pixels changed.
func TestShotsOnlyOfChangedPixels(t *testing.T) {
	r, _, _ := recorder(t, 1<<30)
	b := &pictures{colour: map[string]color.RGBA{"T1": {200, 0, 0, 255}}}
	call(r, b, "one")
	call(r, b, "two") // the tab did not move: no capture, no shot
	if n := b.captured(); n != 1 {
		t.Errorf("%d captures after a call that left the tab alone; want the first call's one", n)
	}
	b.touch("T1")
	call(r, b, "touched") // it moved but shows the same pixels: captured, not kept
	if n := b.captured(); n != 2 {
		t.Errorf("%d captures after a call that touched the tab; want 2", n)
	}
	b.paint("T1", color.RGBA{0, 200, 0, 255})
	b.paint("T2", color.RGBA{0, 0, 200, 255})
	call(r, b, "three")
	if got := kinds(t, r); got != "call shot call call call shot shot" {
		t.Errorf("entries %q; want a shot after the first call, none after the unchanged second and third, two after the fourth", got)
	}
	es, _ := r.Entries(context.Background(), task, 0)
	if s := es[1].Shot; s.AfterOf != 1 || s.Width != 64 || s.Tab != "T1" || s.Bytes == 0 {
		t.Errorf("the first shot %+v", s)
	}
	jpg, err := r.Shot(context.Background(), task, 2)
	if err != nil || len(jpg) == 0 {
		t.Fatalf("Shot: %v", err)
	}
	if _, err := r.Shot(context.Background(), task, 1); err == nil {
		t.Error("Shot of a call entry answered")
	}
}

func TestPasswordsAreHiddenAndMetaKeepsNoText(t *testing.T) {
	r, _, _ := recorder(t, 1<<30)
	b := &pictures{colour: map[string]color.RGBA{}, secrets: []string{"hunter2", "hunter22"}}
	r.Call(web, task, api.CallReport{Client: task, Code: "type hunter22\ntype hunter2", Stdout: "hunter2 typed",
		Args: []string{"--x=hunter2"}, Outcome: api.CallOK}, b)
	meta := web
	meta.Mode = api.TimelineMeta
	r.Call(meta, task, api.CallReport{Client: task, Code: "secret code", Stdout: "out", Args: []string{"a"}, Outcome: api.CallFailed, Exit: 3}, b)
	off := web
	off.Mode = api.TimelineOff
	r.Call(off, task, api.CallReport{Client: task, Code: "nothing"}, b)
	r.work.Wait()
	es, _ := r.Entries(context.Background(), task, 0)
	if len(es) != 2 {
		t.Fatalf("%d entries; want 2 (full and meta; off records nothing)", len(es))
	}
	for _, e := range es {
		c := e.Call
		if c.Outcome == api.CallOK && (c.Code != "type "+Hidden+"\ntype "+Hidden || c.Stdout != Hidden+" typed" || c.Args[0] != "--x="+Hidden) {
			t.Errorf("full call %+v; want every password hidden, the longer one whole", c)
		}
		if c.Outcome == api.CallFailed && (c.Code != "" || c.Stdout != "" || c.Args != nil || c.Exit != 3) {
			t.Errorf("meta call %+v; want the facts without code, output or arguments", c)
		}
	}
}

// VIBE_TIMELINE_MAX_MB bounds a task's whole timeline (issue 37): the oldest shots go first, the entries
// stay; once an agent's entries fill it alone, its calls are refused (ErrFull) and its navigations and
// shots not kept, said once in a fault entry, while a handoff is still recorded.
func TestSizeCapDropsShotsThenRefusesCalls(t *testing.T) {
	b := &pictures{colour: map[string]color.RGBA{"T1": {200, 0, 0, 255}}}
	jpg, _ := b.Thumbnail(context.Background(), "T1", 0, 0)
	r, db, _ := recorder(t, 1<<30)
	var full []string
	r.cfg.Full = func(_, kind string) { full = append(full, kind) }
	for i, c := range []color.RGBA{{200, 0, 0, 255}, {0, 200, 0, 255}, {0, 0, 200, 255}, {200, 200, 0, 255}, {0, 200, 200, 255}} {
		b.paint("T1", c)
		call(r, b, fmt.Sprint("step ", i))
		if i == 0 { // room for the five calls' entries and two and a half shots
			n, _ := db.Timeline().Bytes(context.Background(), task)
			r.cfg.MaxBytes = 5*(n-int64(len(jpg))) + 5*int64(len(jpg))/2
		}
	}
	es, _ := r.Entries(context.Background(), task, 0)
	if got := kinds(t, r); got != "call shot call shot call shot call shot call shot" || es[1].Shot.Bytes != 0 || es[9].Shot.Bytes == 0 {
		t.Fatalf("entries %q (first shot %+v, last %+v); want every entry kept, the oldest shots' files dropped", got, es[1].Shot, es[9].Shot)
	}
	if n, _ := db.Timeline().Bytes(context.Background(), task); n > r.cfg.MaxBytes || len(full) != 0 {
		t.Errorf("the timeline takes %d bytes (cap %d), full told %v; want it within the cap, nothing refused", n, r.cfg.MaxBytes, full)
	}

	big := api.CallReport{Client: task, Code: strings.Repeat("x", int(r.cfg.MaxBytes)), Outcome: api.CallOK}
	if err := r.Call(web, task, big, nil); err != nil {
		t.Fatalf("a call while there is room: %v", err)
	}
	r.work.Wait()
	err := r.Call(web, task, api.CallReport{Client: task, Code: "one more", Outcome: api.CallOK}, b)
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "VIBE_TIMELINE_MAX_MB") {
		t.Fatalf("a call on a full timeline: %v; want ErrFull naming VIBE_TIMELINE_MAX_MB", err)
	}
	ctx := context.Background()
	r.Record(ctx, web, task, api.Entry{Client: task, Nav: &api.NavEntry{Tab: "T1", URL: "https://shop.example/next"}})
	r.Record(ctx, web, task, api.Entry{Client: task, Handoff: &api.HandoffEntry{ID: "h1", Status: api.HandoffPending, Question: "a captcha"}})
	got := kinds(t, r)
	if !strings.HasSuffix(got, "call shot call fault handoff") {
		t.Errorf("entries %q; want the big call, then one fault saying the timeline is full, then the handoff (no nav)", got)
	}
	es, _ = r.Entries(ctx, task, 0)
	if f := es[len(es)-2].Fault; f == nil || f.What != api.FaultQuota || !strings.Contains(f.Message, "VIBE_TIMELINE_MAX_MB") {
		t.Errorf("the fault %+v; want what %q naming VIBE_TIMELINE_MAX_MB", f, api.FaultQuota)
	}
	if want := []string{api.EntryCall, api.EntryNav}; !slices.Equal(full, want) {
		t.Errorf("Config.Full told %v; want %v", full, want)
	}
}

func TestRetentionPrune(t *testing.T) {
	b := &pictures{colour: map[string]color.RGBA{"T1": {200, 0, 0, 255}}}
	r2, _, now2 := recorder(t, 1<<30)
	call(r2, b, "old")
	*now2 = now2.Add(29 * 24 * time.Hour)
	b.paint("T1", color.RGBA{0, 0, 200, 255})
	call(r2, b, "new")
	*now2 = now2.Add(2 * 24 * time.Hour) // the first call is 31 days old, the second 2
	r2.Prune(context.Background())
	if got := kinds(t, r2); got != "call shot" {
		t.Errorf("after the prune: %q; want the second call and its shot only", got)
	}
	files, _ := filepath.Glob(filepath.Join(r2.cfg.Dir, "*", task, "*.jpg"))
	if len(files) != 1 {
		t.Errorf("shot files after the prune: %v; want the newer one", files)
	}
	for _, f := range files {
		if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v; want 0600", f, fi.Mode())
		}
	}
	// Once the prune took the task's last shot, its folder went with it; the next shot makes it again.
	*now2 = now2.Add(31 * 24 * time.Hour)
	r2.Prune(context.Background())
	if dirs, _ := filepath.Glob(filepath.Join(r2.cfg.Dir, "*", task)); len(dirs) != 0 {
		t.Fatalf("the task's shot folders after its last shot was pruned: %v; want none", dirs)
	}
	b.paint("T1", color.RGBA{0, 200, 0, 255})
	call(r2, b, "later")
	if got := kinds(t, r2); got != "call shot" {
		t.Errorf("after a call on the pruned task: %q; want the call and its shot", got)
	}
	if files, _ := filepath.Glob(filepath.Join(r2.cfg.Dir, "*", task, "*.jpg")); len(files) != 1 {
		t.Errorf("shot files after the call: %v; want its one", files)
	}
}

func TestSlot(t *testing.T) {
	for client, want := range map[string]int{task: 0, task + "-w2": 2, task + "-w0": 0, task + "-wx": 0, "aux": 0} {
		if got := api.ClientSlot(task, client); got != want {
			t.Errorf("Slot(%s) = %d; want %d", client, got, want)
		}
	}
}

// A step of a call's client from within the call's time is the call's: those recorded before its report
// (linked by it), a late one after it, and the timeout fault the report tells. A worker slot's step, a
// person's, and one after the call's lag are not.
func TestStepsBelongToTheirCall(t *testing.T) {
	r, _, now := recorder(t, 1<<30)
	ctx := context.Background()
	start := *now
	step := func(e api.Entry, after time.Duration) {
		*now = start.Add(after)
		r.Record(ctx, web, task, e)
	}
	step(api.Entry{Client: task, Nav: &api.NavEntry{Tab: "T1", URL: "https://a.example/"}}, 1*time.Second)
	step(api.Entry{Client: task + "-w2", Nav: &api.NavEntry{Tab: "W1", URL: "https://w.example/"}}, 2*time.Second)
	step(api.Entry{Takeover: &api.TakeoverEntry{Tab: "T1", Event: api.TakeoverTook}}, 2*time.Second)
	step(api.Entry{Client: task, Tab: &api.TabEntry{Tab: "T2", Event: api.TabCreated}}, 3*time.Second)
	*now = start.Add(4 * time.Second)
	r.Call(web, task, api.CallReport{Client: task, Outcome: api.CallTimeout, Rule: "timed out", Start: start,
		End: start.Add(4 * time.Second)}, nil)
	r.work.Wait()
	step(api.Entry{Client: task, Nav: &api.NavEntry{Tab: "T2", URL: "https://late.example/"}}, 4*time.Second+100*time.Millisecond)
	step(api.Entry{Client: task, Nav: &api.NavEntry{Tab: "T2", URL: "https://after.example/"}}, 6*time.Second)

	es, err := r.Entries(ctx, task, 0)
	if err != nil {
		t.Fatal(err)
	}
	var callSeq int64
	for _, e := range es {
		if e.Call != nil {
			callSeq = e.Seq
		}
	}
	var got []string
	for _, e := range es {
		if e.InCall != 0 {
			if e.InCall != callSeq {
				t.Errorf("entry %d is in call %d; the call is %d", e.Seq, e.InCall, callSeq)
			}
			what := e.Kind
			if e.Nav != nil {
				what += " " + e.Nav.URL
			}
			got = append(got, what)
		}
	}
	want := []string{"nav https://a.example/", "tab", "fault", "nav https://late.example/"}
	if !slices.Equal(got, want) {
		t.Errorf("the call's steps = %q; want %q", got, want)
	}
	steps, err := r.CallSteps(ctx, task, callSeq)
	if err != nil || len(steps) != len(want) {
		t.Errorf("CallSteps = %d steps, %v; want %d", len(steps), err, len(want))
	}
}
