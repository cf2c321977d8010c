package ziniao

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Start defaults (SPEC §4.6).
const (
	DefaultAttempts     = 4
	DefaultReadyTimeout = 30 * time.Second
)

var (
	// readyPollEvery is how often readiness is re-checked within an attempt.
	readyPollEvery = 250 * time.Millisecond
	// watchEvery is how often a running environment's debugging port is probed for Done.
	watchEvery = 2 * time.Second
	// stopBound bounds Stop's stopBrowser, and the teardown stopBrowser of a failed attempt.
	stopBound = 15 * time.Second
	// goneBound bounds Stop's wait for the debugging port to stop answering after stopBrowser.
	goneBound = 5 * time.Second
)

// deadAfter is how many probes in a row must fail before a running environment counts as gone: one slow
// answer from a busy browser is not a death.
const deadAfter = 2

// ErrStaleLaunch classifies an attempt whose environment never became ready: its debugging port never
// answered, or Ziniao's instrumentation never went live in it. The manager maps this to 502 start failed.
var ErrStaleLaunch = errors.New("stale launch")

// StartError is Start's error when no attempt gave a ready environment. Err is the last attempt's reason;
// errors.Is sees through it (ErrStaleLaunch, ErrWebDriverNotEnabled, a context error).
type StartError struct {
	Browser  string
	Attempts int // attempts made
	Err      error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("ziniao browser %s: not started after %d attempt(s): %v", e.Browser, e.Attempts, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// StartOptions tunes Start. Zero values mean the defaults.
type StartOptions struct {
	Attempts     int           // startBrowser attempts; zero means DefaultAttempts
	ReadyTimeout time.Duration // per attempt, until CDP answers and instrumentation is live; zero means DefaultReadyTimeout
	Log          zerolog.Logger
}

// Runner is a started store environment. It satisfies the manager's runner interface; its methods are safe
// for concurrent use.
type Runner struct {
	c        *Client
	browser  string
	port     int
	endpoint string
	adopted  bool
	log      zerolog.Logger

	done     chan struct{} // closed when the debugging port has stopped answering, or by Stop
	doneOnce sync.Once
	watchCtx context.Context // cancelled by Stop or Release to end the watcher
	unwatch  context.CancelFunc
	wg       sync.WaitGroup // the watcher

	stopMu  sync.Mutex // serialises Stop; guards stopped
	stopped bool
}

// Start starts browser's environment and returns once it is ready: its debugging port answers CDP and
// Ziniao's instrumentation is live in a page. An attempt that is not ready within ReadyTimeout (a stale
// launch) is closed with that store's stopBrowser and retried, up to Attempts; the shared client is never
// touched beyond that. An API error (statusCode other than "0", such as -10003) or an unreachable client
// is not retried. When ctx ends the half-started environment is closed (bounded) and the error wraps
// ctx.Err(). Every error is a *StartError naming the browser, the attempts made and the last reason.
// Callers must not start the same browser concurrently: a second startBrowser replaces the first session.
func Start(ctx context.Context, c *Client, browser string, o StartOptions) (*Runner, error) {
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	log := o.Log.With().Str("ziniao_browser", browser).Logger()
	var last error
	for i := 1; i <= o.Attempts; i++ {
		alog := log.With().Int("attempt", i).Logger()
		st, err := c.StartBrowser(ctx, browser)
		if err != nil {
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				// The request may have reached the client (a timeout, a cancellation): close whatever it
				// started so no half-started environment is left behind.
				teardown(c, browser, alog)
			}
			return nil, &StartError{Browser: browser, Attempts: i, Err: err}
		}
		alog.Debug().Int("port", st.DebuggingPort).Msg("startBrowser answered; waiting for readiness")
		err = waitReady(ctx, c.host(), st.DebuggingPort, o.ReadyTimeout)
		if err == nil {
			alog.Info().Int("port", st.DebuggingPort).Msg("ziniao environment ready")
			return newRunner(c, browser, st.DebuggingPort, false, log), nil
		}
		last = err
		teardown(c, browser, alog)
		if ctx.Err() != nil {
			return nil, &StartError{Browser: browser, Attempts: i, Err: err}
		}
		alog.Warn().Err(err).Msg("stale launch; stopped this store's environment, retrying")
	}
	return nil, &StartError{Browser: browser, Attempts: o.Attempts, Err: last}
}

// Reconnect adopts browser's environment left running by an earlier manager on debuggingPort: the port must
// still answer CDP and instrumentation must be live. log is the returned Runner's logger, as StartOptions.Log
// is a started one's.
func Reconnect(ctx context.Context, c *Client, browser string, debuggingPort int, log zerolog.Logger) (*Runner, error) {
	if debuggingPort <= 0 || debuggingPort > 65535 {
		return nil, fmt.Errorf("ziniao browser %s: reconnect: bad debugging port %d", browser, debuggingPort)
	}
	host := c.host()
	if err := cdpAnswers(ctx, host, debuggingPort); err != nil {
		return nil, fmt.Errorf("ziniao browser %s: reconnect to port %d: %w", browser, debuggingPort, err)
	}
	if err := instrumentationLive(ctx, host, debuggingPort); err != nil {
		return nil, fmt.Errorf("ziniao browser %s: reconnect to port %d: instrumentation not live: %w", browser, debuggingPort, err)
	}
	log = log.With().Str("ziniao_browser", browser).Logger()
	log.Info().Int("port", debuggingPort).Msg("ziniao environment adopted")
	return newRunner(c, browser, debuggingPort, true, log), nil
}

// waitReady polls until the port answers CDP and instrumentation is live, or timeout (an ErrStaleLaunch
// naming the last reason) or ctx ends.
func waitReady(ctx context.Context, host string, port int, timeout time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(readyPollEvery)
	defer t.Stop()
	reason := fmt.Errorf("debugging port %d never answered", port)
	for {
		var err error
		if err = cdpAnswers(rctx, host, port); err != nil {
			err = fmt.Errorf("debugging port %d never answered: %w", port, err)
		} else if err = instrumentationLive(rctx, host, port); err != nil {
			err = fmt.Errorf("debugging port %d answers but instrumentation is not live: %w", port, err)
		} else {
			return nil
		}
		if rctx.Err() == nil {
			reason = err // a probe cut short by the deadline says nothing new
		}
		select {
		case <-rctx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for readiness (%v): %w", reason, ctx.Err())
			}
			return fmt.Errorf("%w within %s: %w", ErrStaleLaunch, timeout, reason)
		case <-t.C:
		}
	}
}

// teardown closes browser's environment after a failed attempt, bounded and independent of the caller's
// (possibly ended) context. A failure is only logged: the next startBrowser replaces the session anyway.
func teardown(c *Client, browser string, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), stopBound)
	defer cancel()
	if err := c.StopBrowser(ctx, browser); err != nil {
		log.Warn().Err(err).Msg("stopBrowser after a failed attempt")
	}
}

func newRunner(c *Client, browser string, port int, adopted bool, log zerolog.Logger) *Runner {
	r := &Runner{
		c:        c,
		browser:  browser,
		port:     port,
		endpoint: cdpBase(c.host(), port),
		adopted:  adopted,
		log:      log.With().Int("port", port).Logger(),
		done:     make(chan struct{}),
	}
	r.watchCtx, r.unwatch = context.WithCancel(context.Background())
	r.wg.Add(1)
	go r.watch()
	return r
}

// PID returns 0: the environment is the Ziniao client's child, not the manager's.
func (r *Runner) PID() int { return 0 }

// StartTime returns 0: the manager runs no process for the environment.
func (r *Runner) StartTime() int64 { return 0 }

// Endpoint returns the environment's DevTools HTTP endpoint, http://<client host>:<debuggingPort>.
func (r *Runner) Endpoint() string { return r.endpoint }

// DebuggingPort returns the environment's CDP port (record it for Reconnect).
func (r *Runner) DebuggingPort() int { return r.port }

// Browser returns the browser id the environment was started with.
func (r *Runner) Browser() string { return r.browser }

// Adopted reports whether the environment came from Reconnect rather than Start.
func (r *Runner) Adopted() bool { return r.adopted }

// Done is closed when the debugging port has stopped answering (probed every 2 s) or after Stop.
func (r *Runner) Done() <-chan struct{} { return r.done }

// Stop closes the environment with stopBrowser (bounded by 15 s and ctx), waits (bounded) for its debugging
// port to stop answering, ends the watcher and closes Done (even when it returns an error: the caller is
// done with this Runner). An API error from an environment whose port is already dead counts as stopped.
// Stopping a stopped Runner is a no-op.
func (r *Runner) Stop(ctx context.Context) error {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	if r.stopped {
		return nil
	}
	defer r.endWatch()
	sctx, cancel := context.WithTimeout(ctx, stopBound)
	err := r.c.StopBrowser(sctx, r.browser)
	cancel()
	if err != nil {
		var apiErr *APIError
		// Probed without ctx (bounded by probeBound): an ended ctx must not pass for a dead port.
		if errors.As(err, &apiErr) && !r.answers(context.Background()) {
			r.log.Info().Err(err).Msg("stopBrowser refused, but the environment is already gone")
			r.stopped = true
			return nil
		}
		return fmt.Errorf("ziniao browser %s: stop: %w", r.browser, err)
	}
	gctx, cancel := context.WithTimeout(ctx, goneBound)
	defer cancel()
	if !r.waitGone(gctx) {
		return fmt.Errorf("ziniao browser %s: stop: debugging port %d still answers %s after stopBrowser", r.browser, r.port, goneBound)
	}
	r.stopped = true
	r.log.Info().Msg("ziniao environment stopped")
	return nil
}

// Release stops watching the environment without stopping it (the manager exiting and leaving browsers
// running); Done then never closes unless it already has. Safe to call more than once.
func (r *Runner) Release() {
	r.unwatch()
	r.wg.Wait()
}

// endWatch ends the watcher and closes Done.
func (r *Runner) endWatch() {
	r.Release()
	r.doneOnce.Do(func() { close(r.done) })
}

// watch closes Done when the debugging port fails deadAfter probes in a row, or returns on Release.
func (r *Runner) watch() {
	defer r.wg.Done()
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-r.watchCtx.Done():
			return
		case <-t.C:
		}
		err := cdpAnswers(r.watchCtx, r.c.host(), r.port)
		if r.watchCtx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
			continue
		}
		failures++
		if failures >= deadAfter {
			r.log.Info().Err(err).Msg("ziniao environment's debugging port stopped answering")
			r.doneOnce.Do(func() { close(r.done) })
			return
		}
	}
}

// answers reports whether the debugging port answers CDP now.
func (r *Runner) answers(ctx context.Context) bool {
	return cdpAnswers(ctx, r.c.host(), r.port) == nil
}

// waitGone polls until the debugging port stops answering or ctx ends, and reports whether it did.
func (r *Runner) waitGone(ctx context.Context) bool {
	t := time.NewTicker(readyPollEvery)
	defer t.Stop()
	for {
		if !r.answers(ctx) {
			return ctx.Err() == nil // a probe cut short by ctx proves nothing
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
