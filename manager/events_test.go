package manager

import (
	"fmt"
	"testing"
	"time"

	"vibebrowser/manager/api"
)

func TestEventLogKeepsTheNewestInOrder(t *testing.T) {
	var l eventLog
	if got := l.list(); len(got) != 0 {
		t.Fatalf("empty log lists %d events", len(got))
	}
	for i := range recentEvents + 5 {
		l.add(api.Event{Kind: api.EventBrowserDied, Message: fmt.Sprint(i)})
	}
	got := l.list()
	if len(got) != recentEvents || got[0].Message != "5" || got[len(got)-1].Message != fmt.Sprint(recentEvents+4) {
		t.Errorf("after %d events: %d kept, first %q, last %q; want the newest %d, oldest first",
			recentEvents+5, len(got), got[0].Message, got[len(got)-1].Message, recentEvents)
	}
}

// An agent's flood of reports turns over only the reports' ring: the manager's own events and the
// handoffs stay listed, in time order with the newest reports.
func TestEventLogKeepsTheManagersOwnThroughAFloodOfReports(t *testing.T) {
	var l eventLog
	at := time.Now()
	next := func() time.Time { at = at.Add(time.Millisecond); return at }
	l.add(api.Event{At: next(), Kind: api.EventHandoffRequested, Handoff: "victim"})
	l.add(api.Event{At: next(), Kind: api.EventBudgetSpent})
	for i := range 3 * recentEvents {
		l.add(api.Event{At: next(), Kind: api.EventWedgeUnrecoverable, Message: fmt.Sprint(i)})
	}
	l.add(api.Event{At: next(), Kind: api.EventBrowserDied})
	got := l.list()
	if len(got) != 3+recentReports {
		t.Fatalf("%d events listed; want the manager's 3 and the newest %d reports", len(got), recentReports)
	}
	if got[0].Handoff != "victim" || got[1].Kind != api.EventBudgetSpent || got[len(got)-1].Kind != api.EventBrowserDied {
		t.Errorf("listed %v … %v; want the victim's handoff, the budget, the reports, then the browser's death", got[:2], got[len(got)-1])
	}
	if first := got[2].Message; first != fmt.Sprint(3*recentEvents-recentReports) {
		t.Errorf("the oldest report kept is %q; want %d", first, 3*recentEvents-recentReports)
	}
	for i := 1; i < len(got); i++ {
		if got[i].At.Before(got[i-1].At) {
			t.Fatalf("event %d is older than the one before it; want time order", i)
		}
	}
}

func TestEventLogCountsEachTaskPerMinute(t *testing.T) {
	var l eventLog
	now := time.Now()
	for i := range 3 {
		if !l.allow("a", 3, now.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("report %d of a refused; want 3 a minute", i+1)
		}
	}
	if l.allow("a", 3, now.Add(30*time.Second)) {
		t.Error("a fourth report of a within the minute allowed")
	}
	if !l.allow("b", 3, now.Add(30*time.Second)) {
		t.Error("b's first report refused; want each task counted alone")
	}
	if !l.allow("a", 3, now.Add(61*time.Second)) {
		t.Error("a's report in the next minute refused")
	}
}
