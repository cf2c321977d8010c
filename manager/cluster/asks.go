package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Hosts ask each other over NATS request/reply (SPEC §19 "Routing"): an ensure for a store placed elsewhere
// is asked of its host. A subject names the host asked and the kind of question; the answer is an envelope
// carrying the handler's answer or its refusal.

// answerBound bounds one handler's work on a question (a cold browser start included).
const answerBound = 3 * time.Minute

// envelope is an answer on the wire.
type envelope struct {
	Answer json.RawMessage `json:"answer,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// RefusedError is a host's refusal of a question: its message, as the handler said it.
type RefusedError struct{ Host, Message string }

func (e *RefusedError) Error() string { return "host " + e.Host + ": " + e.Message }

func askSubject(host, kind string) string { return "vibe.ask." + host + "." + kind }

// Answer answers the questions of kind put to host (this host) with handle, each on a goroutine of its own
// and bounded by answerBound, until stop is called; stop waits for the answers in progress.
func (c *Conn) Answer(host, kind string, handle func(ctx context.Context, question []byte) (answer any, err error)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex // guards stopped and wg's additions
	stopped := false
	sub, err := c.nc.Subscribe(askSubject(host, kind), func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		wg.Go(func() {
			actx, acancel := context.WithTimeout(ctx, answerBound)
			defer acancel()
			var env envelope
			a, err := handle(actx, m.Data)
			if err == nil {
				env.Answer, err = json.Marshal(a)
			}
			if err != nil {
				env = envelope{Error: err.Error()}
			}
			b, _ := json.Marshal(env)
			_ = m.Respond(b)
		})
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("answer %s questions: %w", kind, err)
	}
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		_ = sub.Unsubscribe()
		cancel()
		wg.Wait()
	}, nil
}

// Unheard reports whether err is Ask's when nothing on the cluster listens for the host asked: its manager
// is not running, or not connected.
func Unheard(err error) bool { return errors.Is(err, nats.ErrNoResponders) }

// Ask puts question (JSON of it) of kind to host and decodes its answer into answer. A refusal is a
// *RefusedError; a host that does not answer within ctx is an error wrapping context.DeadlineExceeded or
// nats.ErrNoResponders (no such host listening).
func (c *Conn) Ask(ctx context.Context, host, kind string, question, answer any) error {
	q, err := json.Marshal(question)
	if err != nil {
		return err
	}
	m, err := c.nc.RequestWithContext(ctx, askSubject(host, kind), q)
	if errors.Is(err, nats.ErrNoResponders) {
		return fmt.Errorf("host %s does not answer (is its manager running?): %w", host, err)
	}
	if err != nil {
		return fmt.Errorf("ask host %s: %w", host, err)
	}
	var env envelope
	if err := json.Unmarshal(m.Data, &env); err != nil {
		return fmt.Errorf("host %s's answer: %w", host, err)
	}
	if env.Error != "" {
		return &RefusedError{Host: host, Message: env.Error}
	}
	return json.Unmarshal(env.Answer, answer)
}
