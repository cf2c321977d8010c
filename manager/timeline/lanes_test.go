package timeline

import (
	"context"
	"fmt"
	"image/color"
	"sync"
	"testing"

	"vibebrowser/manager/api"
)

// slowShots is a browser whose first capture waits until the test lets it go, whose every capture shows new
// pixels, and that counts the captures in progress at once.
type slowShots struct {
	*pictures
	started, release chan struct{}
	once             sync.Once
	mu               sync.Mutex
	now, most, shots int
}

func (s *slowShots) Thumbnail(ctx context.Context, id string, w, q int) ([]byte, error) {
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}()
	s.once.Do(func() {
		close(s.started)
		<-s.release
	})
	s.mu.Lock()
	s.shots++
	n := s.shots
	s.mu.Unlock()
	s.paint(id, color.RGBA{uint8(3 * n), uint8(255 - 3*n), 0, 255}) // each capture shows new pixels
	return s.pictures.Thumbnail(ctx, id, w, q)
}

// A browser's calls are recorded one at a time, in the order they were reported: a call reported while
// the one before it is being captured waits in the lane, its entry after the first call's shot; past
// maxLane waiting calls, a call is recorded without its shots.
func TestCallsTakeTurnsPerBrowser(t *testing.T) {
	r, _, _ := recorder(t, 1<<30)
	b := &slowShots{pictures: &pictures{colour: map[string]color.RGBA{"T1": {200, 0, 0, 255}}},
		started: make(chan struct{}), release: make(chan struct{})}
	report := func(i int) {
		t.Helper()
		if err := r.Call(web, task, api.CallReport{Client: task, Code: fmt.Sprint("step ", i), Outcome: api.CallOK}, b); err != nil {
			t.Fatal(err)
		}
	}
	report(0)
	<-b.started // the first call's shot is being taken
	for i := 1; i <= maxLane+1; i++ {
		report(i)
	}
	r.mu.Lock()
	waiting := len(r.lanes[web.Key].waiting)
	r.mu.Unlock()
	if waiting != maxLane+1 {
		t.Errorf("%d calls wait in the lane while the first is captured; want all %d reported after it", waiting, maxLane+1)
	}
	close(b.release)
	r.work.Wait()

	es, err := r.Entries(context.Background(), task, 0)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	shots := 0
	for i, e := range es {
		switch {
		case e.Call != nil:
			calls = append(calls, e.Call.Code)
		case e.Shot != nil:
			shots++
			if prev := es[i-1]; prev.Call == nil || e.Shot.AfterOf != prev.Seq {
				t.Errorf("shot %d after entry %d (%s); want each shot right after its own call", e.Seq, prev.Seq, prev.Kind)
			}
		}
	}
	for i, code := range calls {
		if code != fmt.Sprint("step ", i) {
			t.Fatalf("calls recorded in the order %q; want the order they were reported", calls)
		}
	}
	if len(calls) != maxLane+2 || shots != maxLane+1 {
		t.Errorf("%d calls and %d shots; want %d calls, every one but the last (past maxLane) with its shot", len(calls), shots, maxLane+2)
	}
	if b.most != 1 {
		t.Errorf("%d captures of one browser at once; want 1", b.most)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lanes) != 0 {
		t.Errorf("%d lanes left once every call is recorded; want none", len(r.lanes))
	}
}
