package chrome

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"vibebrowser/mux/sys/procid"

	"github.com/rs/zerolog"
)

// Stop bounds (SPEC §4.6): each step is bounded so a wedged browser never wedges the manager.
const (
	closeBound = 2 * time.Second // Browser.close until the group is gone
	termBound  = 3 * time.Second // SIGTERM until the group is gone
	killBound  = 3 * time.Second // SIGKILL until the group is gone
	// drainBound: how long the waiter lets Chromium's stderr drain after it exits; a helper that escaped
	// the group could otherwise hold the pipe open forever.
	drainBound = time.Second
	// reapedWait: how long Launch waits for done when its child is already out of the process table (reaped,
	// its waiter still draining stderr, within drainBound).
	reapedWait = drainBound + time.Second
	// pollEvery is the liveness / readiness polling interval.
	pollEvery = 50 * time.Millisecond
	// adoptPollEvery is how often an adopted browser's liveness is checked for Done.
	adoptPollEvery = 250 * time.Millisecond
)

// Process is a running Chromium browser, launched by Launch or adopted by Adopt. Its methods are safe for
// concurrent use.
type Process struct {
	pid        int
	pgid       int  // process group to signal; equals pid when the browser leads its group
	useGroup   bool // signal pgid (false: an adopted browser that does not lead its group, signal pid only)
	start      int64
	profileDir string
	httpURL    string
	wsURL      string
	adopted    bool
	keeper     *keeperRef // the holder of the browser's pipe; nil for a browser on a port
	log        zerolog.Logger
	stderr     *ring // a port's launched browser only: its stderr belongs to whoever launched it

	done      chan struct{} // closed when the browser has exited
	exitErr   error         // launched only; written before done is closed
	unwatch   chan struct{} // adopted only; closed by Release to stop the liveness watcher
	unwatchMu sync.Once
	wg        sync.WaitGroup // background goroutines (waiter, stderr reader, watcher)

	stopMu sync.Mutex // serialises Stop
}

// PID returns the browser process id.
func (p *Process) PID() int { return p.pid }

// StartTime returns the browser's start time in ms since the epoch (procid); record it with
// the pid so a later Adopt can tell the same process from a reuse of its pid.
func (p *Process) StartTime() int64 { return p.start }

// ProfileDir returns the absolute --user-data-dir of the browser.
func (p *Process) ProfileDir() string { return p.profileDir }

// Endpoint returns what the mux dials: unix:<keeper socket> for a browser on the pipe, its DevTools HTTP
// endpoint http://127.0.0.1:<port> for one on a port.
func (p *Process) Endpoint() string {
	if p.keeper != nil {
		return "unix:" + p.keeper.socket
	}
	return p.httpURL
}

// HTTPEndpoint returns a browser on a port's DevTools HTTP endpoint, http://127.0.0.1:<port>; "" on the pipe.
func (p *Process) HTTPEndpoint() string { return p.httpURL }

// WSEndpoint returns a browser on a port's websocket URL from /json/version; "" on the pipe.
func (p *Process) WSEndpoint() string { return p.wsURL }

// Transport returns how the manager speaks to the browser.
func (p *Process) Transport() Transport {
	if p.keeper != nil {
		return TransportPipe
	}
	return TransportPort
}

// KeeperPID returns the pid of the keeper holding the browser's pipe; 0 for a browser on a port.
func (p *Process) KeeperPID() int {
	if p.keeper == nil {
		return 0
	}
	return p.keeper.pid
}

// Adopted reports whether the browser was adopted rather than launched by this process.
func (p *Process) Adopted() bool { return p.adopted }

// Done is closed when the browser process has exited: for a launched browser when it has been waited for,
// for an adopted one when polling finds its pid dead or reused (until Release).
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr returns how a launched browser exited (nil for status 0) once Done is closed; nil for an adopted
// browser or one still running.
func (p *Process) ExitErr() error {
	select {
	case <-p.done:
		return p.exitErr
	default:
		return nil
	}
}

// Stderr returns the last lines Chromium wrote to stderr/stdout, oldest first (nil for an adopted browser on
// a port); for a browser on the pipe, its keeper's too.
func (p *Process) Stderr() []string {
	if p.keeper != nil {
		return p.keptStderr()
	}
	if p.stderr == nil {
		return nil
	}
	return p.stderr.snapshot()
}

// Release stops watching an adopted browser without stopping it (the manager exiting with
// VIBE_KEEP_BROWSERS_ON_EXIT); Done then never closes. For a launched browser it does nothing: its waiter
// ends when the browser exits, and a browser outliving the manager is unharmed by its stderr pipe closing
// (Chromium ignores SIGPIPE). Safe to call more than once.
func (p *Process) Release() {
	if p.unwatch == nil {
		return
	}
	p.unwatchMu.Do(func() { close(p.unwatch) })
	p.wg.Wait()
}

// Stop stops the browser and its process group: Browser.close (bounded 2 s), then SIGTERM to the group
// (bounded 3 s), then SIGKILL of the group, and returns when no process of the group is left; for a browser
// on the pipe its keeper takes those steps and goes with it. It is always bounded: when ctx ends it skips to
// SIGKILL, whose wait is bounded too. It returns an error only if something is still present after SIGKILL.
// Stopping a stopped browser is a no-op.
func (p *Process) Stop(ctx context.Context) error {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	if p.gone() {
		return nil
	}
	if p.keeper != nil {
		return p.stopKept(ctx)
	}
	log := p.log.With().Int("pid", p.pid).Logger()
	if p.wsURL != "" && ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, closeBound)
		err := browserClose(cctx, p.wsURL)
		if err == nil {
			p.waitGone(cctx)
		}
		cancel()
		if p.gone() {
			log.Info().Msg("chromium stopped by Browser.close")
			return nil
		}
		log.Warn().AnErr("close_err", err).Msg("chromium did not close; sending SIGTERM")
	}
	if ctx.Err() == nil {
		if err := p.signal(syscall.SIGTERM); err != nil {
			log.Warn().Err(err).Msg("SIGTERM")
		}
		tctx, cancel := context.WithTimeout(ctx, termBound)
		p.waitGone(tctx)
		cancel()
		if p.gone() {
			log.Info().Msg("chromium stopped by SIGTERM")
			return nil
		}
	}
	log.Warn().Msg("chromium still running; sending SIGKILL to its process group")
	if err := p.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("stop chromium pid %d: %w", p.pid, err)
	}
	// Not bound by ctx: once SIGKILL is sent, finishing the wait is what makes Stop's answer true.
	kctx, cancel := context.WithTimeout(context.Background(), killBound)
	defer cancel()
	if !p.waitGone(kctx) {
		return fmt.Errorf("stop chromium pid %d: process group %d still present %s after SIGKILL", p.pid, p.pgid, killBound)
	}
	return nil
}

// gone reports whether the browser and (when we own it) its process group are gone.
func (p *Process) gone() bool {
	if p.keeper != nil {
		return !p.keeperLive() && !(p.useGroup && groupAlive(p.pgid))
	}
	if p.adopted {
		if procid.LiveAs(context.Background(), p.pid, p.start) {
			return false
		}
	} else {
		select {
		case <-p.done:
		default:
			return false
		}
	}
	return !p.useGroup || !groupAlive(p.pgid)
}

// waitGone polls gone until it is true or ctx ends, and reports gone.
func (p *Process) waitGone(ctx context.Context) bool {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		if p.gone() {
			return true
		}
		select {
		case <-ctx.Done():
			return p.gone()
		case <-t.C:
		}
	}
}

// signal sends sig to the browser's group (or to the browser alone when it does not lead a group). An
// adopted browser is re-identified by start time first, so a reused pid is never signalled.
func (p *Process) signal(sig syscall.Signal) error {
	leaderLive := false
	if p.adopted {
		leaderLive = procid.LiveAs(context.Background(), p.pid, p.start)
	} else {
		select {
		case <-p.done:
		default:
			leaderLive = true // our unreaped child: its pid cannot be reused
		}
	}
	if p.useGroup {
		// While any member is left the group id cannot be reused, so the group is still ours.
		if leaderLive || groupAlive(p.pgid) {
			return signalGroup(p.pgid, sig)
		}
		return nil
	}
	if leaderLive {
		return signalPID(p.pid, sig)
	}
	return nil
}

// killGroup is an attempt's teardown: SIGKILL the whole group and wait (bounded) until it is gone.
func (p *Process) killGroup() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), killBound)
	defer cancel()
	if !p.waitGone(ctx) {
		return fmt.Errorf("process group %d still present %s after SIGKILL", p.pgid, killBound)
	}
	return nil
}

// waitLaunched waits for a launched browser: when it exits, the rest of its group is killed before the
// browser is reaped (so the group id is still reserved), stderr is drained, and done is closed.
func (p *Process) waitLaunched(cmd *exec.Cmd, stderrR *os.File, readerDone <-chan struct{}) {
	defer p.wg.Done()
	if procid.WaitExited(p.pid) {
		// Renderers and the zygote must not outlive their browser.
		_ = signalGroup(p.pgid, syscall.SIGKILL)
	}
	err := cmd.Wait()
	t := time.NewTimer(drainBound)
	select {
	case <-readerDone:
	case <-t.C:
		stderrR.Close() // unblocks the reader
		<-readerDone
	}
	t.Stop()
	stderrR.Close()
	p.exitErr = err
	close(p.done)
}

// watchAdopted closes done when the adopted browser's pid is dead or reused (for a browser on the pipe, its
// keeper's: the browser follows it, and Stop makes sure it does), or returns on Release.
func (p *Process) watchAdopted() {
	defer p.wg.Done()
	t := time.NewTicker(adoptPollEvery)
	defer t.Stop()
	for {
		select {
		case <-p.unwatch:
			return
		case <-t.C:
			if p.keeper != nil && !p.keeperLive() {
				close(p.done)
				return
			}
			if p.keeper == nil && !procid.LiveAs(context.Background(), p.pid, p.start) {
				close(p.done)
				return
			}
		}
	}
}
