package manager

import (
	"fmt"
	"testing"

	"vibebrowser/manager/api"
)

func TestEventLogKeepsTheNewestInOrder(t *testing.T) {
	var l eventLog
	if got := l.list(); len(got) != 0 {
		t.Fatalf("empty log lists %d events", len(got))
	}
	for i := range recentEvents + 5 {
		l.add(api.Event{Message: fmt.Sprint(i)})
	}
	got := l.list()
	if len(got) != recentEvents || got[0].Message != "5" || got[len(got)-1].Message != fmt.Sprint(recentEvents+4) {
		t.Errorf("after %d events: %d kept, first %q, last %q; want the newest %d, oldest first",
			recentEvents+5, len(got), got[0].Message, got[len(got)-1].Message, recentEvents)
	}
}
