package state

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

func TestTimelineAppendAndList(t *testing.T) {
	db, ctx := openTest(t), context.Background()
	s, err := db.CreateStore(ctx, Store{Name: "Shop", Backend: BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range []TimelineEntry{
		{TaskID: "t1", StoreID: s.ID, ClientID: "t1", Kind: "call", Data: json.RawMessage(`{"code":"open x"}`)},
		{TaskID: "t2", Kind: "nav"}, // the web browser's task: numbered on its own
		{TaskID: "t1", StoreID: s.ID, ClientID: "t1-w2", Kind: "call"},
		{TaskID: "t1", StoreID: s.ID, ClientID: "t1", Kind: "shot", File: "shop/t1/3.jpg", Bytes: 10},
	} {
		got, err := db.Timeline().Append(ctx, e)
		if err != nil {
			t.Fatalf("AppendTimeline #%d: %v", i, err)
		}
		if got.At.IsZero() || string(got.Data) == "" {
			t.Errorf("AppendTimeline #%d = %+v; want its time and data set", i, got)
		}
	}
	all, err := db.Timeline().List(ctx, "t1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range all {
		seqs = append(seqs, e.Seq)
	}
	if !slices.Equal(seqs, []int64{1, 2, 3}) || all[0].StoreID != s.ID || all[1].ClientID != "t1-w2" ||
		string(all[0].Data) != `{"code":"open x"}` || all[2].File != "shop/t1/3.jpg" || all[2].Bytes != 10 {
		t.Fatalf("ListTimeline(t1) = %+v; want t1's three entries, numbered 1..3, as recorded", all)
	}
	after, err := db.Timeline().List(ctx, "t1", 1, 1)
	if err != nil || len(after) != 1 || after[0].Seq != 2 {
		t.Errorf("ListTimeline(t1, after 1, limit 1) = %+v, %v; want entry 2 only", after, err)
	}
	if web, err := db.Timeline().List(ctx, "t2", 0, 0); err != nil || len(web) != 1 || web[0].Seq != 1 || web[0].StoreID != "" {
		t.Errorf("ListTimeline(t2) = %+v, %v; want the web task's one entry, seq 1", web, err)
	}
	if _, err := db.Timeline().Append(ctx, TimelineEntry{TaskID: "t1", Kind: "screenshot"}); err == nil {
		t.Error("an entry of an unknown kind was recorded")
	}
	if _, err := db.Timeline().Append(ctx, TimelineEntry{Kind: "nav"}); err == nil {
		t.Error("an entry without a task was recorded")
	}
	if err := db.DeleteStore(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if left, _ := db.Timeline().List(ctx, "t1", 0, 0); len(left) != 0 {
		t.Errorf("a deleted store's timeline kept %d entries", len(left))
	}
}

func TestTimelinePruneAndCap(t *testing.T) {
	db, ctx := openTest(t), context.Background()
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	add := func(at time.Time, kind string, file string, n int64) {
		t.Helper()
		if _, err := db.Timeline().Append(ctx, TimelineEntry{TaskID: "t1", At: at, Kind: kind, File: file, Bytes: n}); err != nil {
			t.Fatal(err)
		}
	}
	add(day, "call", "", 0)
	add(day.Add(time.Minute), "shot", "a.jpg", 40)
	add(day.Add(48*time.Hour), "shot", "b.jpg", 40)
	add(day.Add(49*time.Hour), "shot", "c.jpg", 40)
	add(day.Add(50*time.Hour), "nav", "", 0)

	// Five entries of "{}" (10 bytes) and three shots of 40: 130 bytes.
	if n, err := db.Timeline().Bytes(ctx, "t1"); err != nil || n != 130 {
		t.Fatalf("TimelineBytes(t1) = %d, %v; want 130 (entries' data and shots' files)", n, err)
	}
	dropped, total, err := db.Timeline().CapShots(ctx, "t1", 90)
	if err != nil || !slices.Equal(dropped, []string{"a.jpg"}) || total != 90 {
		t.Fatalf("CapTimelineShots(90 of 130 bytes) = %v, %d, %v; want the oldest shot dropped, 90 left", dropped, total, err)
	}
	if dropped, total, err := db.Timeline().CapShots(ctx, "t1", 90); err != nil || len(dropped) != 0 || total != 90 {
		t.Errorf("CapTimelineShots at the cap = %v, %d, %v; want nothing dropped, 90", dropped, total, err)
	}
	if dropped, total, err := db.Timeline().CapShots(ctx, "t1", 5); err != nil || len(dropped) != 2 || total != 10 {
		t.Errorf("CapTimelineShots below the entries = %v, %d, %v; want every shot dropped, the entries' 10 bytes left", dropped, total, err)
	}
	es, _ := db.Timeline().List(ctx, "t1", 0, 0)
	if len(es) != 5 || es[1].File != "" || es[1].Bytes != 0 || es[2].File != "" {
		t.Fatalf("after the cap: %+v; want every entry kept, the shots' files gone", es)
	}
	if _, err := db.Timeline().Append(ctx, TimelineEntry{TaskID: "t1", At: day.Add(time.Hour), Kind: "shot", File: "d.jpg", Bytes: 40}); err != nil {
		t.Fatal(err)
	}

	files, err := db.Timeline().Prune(ctx, day.Add(48*time.Hour+30*time.Minute))
	if err != nil || !slices.Equal(files, []string{"d.jpg"}) {
		t.Fatalf("PruneTimeline = %v, %v; want the pruned entries' one remaining shot file", files, err)
	}
	es, _ = db.Timeline().List(ctx, "t1", 0, 0)
	if len(es) != 2 || es[0].Seq != 4 || es[1].Seq != 5 {
		t.Fatalf("after pruning: %+v; want entries 4 and 5", es)
	}
	if e, err := db.Timeline().Append(ctx, TimelineEntry{TaskID: "t1", Kind: "call"}); err != nil || e.Seq != 6 {
		t.Errorf("the next entry after a prune = %+v, %v; want seq 6 (numbers are never reused while entries remain)", e, err)
	}
}

// A call takes the steps of its client that happened while it ran and belong to no call yet; another
// client's, a person's, and those before or after it stay outside.
func TestLinkTimelineCall(t *testing.T) {
	db, ctx := openTest(t), context.Background()
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, e := range []TimelineEntry{
		{ClientID: "t1", Kind: "nav", At: at(0)},      // 1: before the call
		{ClientID: "t1", Kind: "tab", At: at(2)},      // 2: in it
		{ClientID: "t1-w2", Kind: "nav", At: at(3)},   // 3: another slot's
		{ClientID: "t1", Kind: "nav", At: at(4)},      // 4: in it
		{ClientID: "", Kind: "takeover", At: at(4)},   // 5: a person's
		{ClientID: "t1", Kind: "call", At: at(6)},     // 6: the call, 1 s to 5 s
		{ClientID: "t1", Kind: "download", At: at(9)}, // 7: after it
		{ClientID: "t1", Kind: "fault", At: at(2), InCall: 6},
	} {
		e.TaskID = "t1"
		var err error
		if e.Kind == "call" {
			_, err = db.Timeline().AppendCall(ctx, e, at(1), at(5), stepKinds)
		} else {
			_, err = db.Timeline().Append(ctx, e)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Timeline().OfCall(ctx, "t1", 6)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range got {
		seqs = append(seqs, e.Seq)
	}
	if !slices.Equal(seqs, []int64{2, 4, 8}) {
		t.Errorf("TimelineOfCall(6) = %v; want steps 2 and 4 (linked) and 8 (recorded in it)", seqs)
	}
	all, _ := db.Timeline().List(ctx, "t1", 0, 0)
	for _, e := range all {
		if want := slices.Contains([]int64{2, 4, 8}, e.Seq); (e.InCall == 6) != want {
			t.Errorf("entry %d (%s) in call %d; want in call 6: %v", e.Seq, e.Kind, e.InCall, want)
		}
	}
}

// A step an earlier call's window caught (its lag past its end) goes to the call that was running when it
// happened, once that call reports.
func TestLinkTimelineCallTakesFromTheLag(t *testing.T) {
	db, ctx := openTest(t), context.Background()
	t0 := time.Unix(1000, 0)
	for _, e := range []TimelineEntry{
		{ClientID: "t1", Kind: "call", At: t0},                                       // 1: ended at t0
		{ClientID: "t1", Kind: "tab", At: t0.Add(100 * time.Millisecond), InCall: 1}, // 2: in 1's lag
		{ClientID: "t1", Kind: "nav", At: t0.Add(-time.Second), InCall: 1},           // 3: 1's own
	} {
		e.TaskID = "t1"
		if _, err := db.Timeline().Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	second := TimelineEntry{TaskID: "t1", ClientID: "t1", Kind: "call", At: t0.Add(3 * time.Second)} // 4: from t0+50ms
	if _, err := db.Timeline().AppendCall(ctx, second, t0.Add(50*time.Millisecond), t0.Add(3*time.Second), stepKinds); err != nil {
		t.Fatal(err)
	}
	all, _ := db.Timeline().List(ctx, "t1", 0, 0)
	if all[1].InCall != 4 || all[2].InCall != 1 {
		t.Errorf("after the second call: the tab is in call %d, the nav in %d; want 4 and 1", all[1].InCall, all[2].InCall)
	}
}

// stepKinds are the kinds of steps the timeline links to calls (manager/timeline's).
var stepKinds = []string{"nav", "tab", "download", "fault"}
