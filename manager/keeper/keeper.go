package keeper

import (
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/netid"
)

// Exit codes of the keeper besides Chromium's own status, which it passes on.
const (
	exitFailure = 1 // the keeper could not start or serve; the log says why
	exitUsage   = 2 // the command line is wrong
)

// bufSize is the keeper's read buffer while it holds the pipe.
const bufSize = 256 << 10

// Stop bounds (SPEC §13): each step is bounded so a wedged Chromium never wedges its keeper.
const (
	closeBound = 2 * time.Second // Browser.close until Chromium exits
	termBound  = 3 * time.Second // SIGTERM of its group until it exits
	killBound  = 3 * time.Second // SIGKILL of its group until it is reaped
	resetBound = 5 * time.Second // the NUL that ends a gone client's last message, written to a full pipe
	lentBound  = time.Second     // a client asked for the pipe back until it has given it
	// orphanCloseBound is Browser.close's bound at an orphan stop (--orphan-stop), after which SIGKILL.
	orphanCloseBound = time.Second
)

// keeper is one running keeper: Chromium, its pipe, the socket and the client the pipe is lent to.
type keeper struct {
	cfg    Config
	log    zerolog.Logger
	socket string // SocketPath
	idPath string // IdentityPath
	br     *browser
	quit   chan struct{} // closed when the keeper stops: a reset in progress gives up

	ln      *net.UnixListener
	lnFile  os.FileInfo // the socket file as the keeper made it: it removes that file and no other
	written *Identity   // the identity file as the keeper wrote it: the same rule

	// wmu serialises the keeper's own writes to the pipe (its commands, the NUL of a take-back); it writes
	// only while it holds the pipe.
	wmu sync.Mutex

	mu sync.Mutex
	// mu guards the fields below.
	client   *client                // the client the pipe is lent to; nil while the keeper holds it
	reader   *holdReader            // the keeper's reading of the pipe while it holds it; nil while lent
	stopping bool                   // no client is served any more
	calls    map[int64]func([]byte) // the keeper's own commands in flight → what to do with the answer
	nextCall int64
	conns    int         // connections accepted, to number them in the log
	orphan   *time.Timer // runs while no client holds the pipe, with Config.OrphanStop; nil otherwise

	orphaned chan struct{}  // sent on (cap 1) when the keeper has been without a client for Config.OrphanStop
	wg       sync.WaitGroup // the pipe's reader, the accept loop and the watch of a client
}

// run is the keeper's whole life: Chromium started, readiness, clients served until Chromium exits or a
// signal stops it, then the cleanup. It returns the process's exit code.
func run(cfg Config, upstream netid.Proxy, log zerolog.Logger, sigs <-chan os.Signal) int {
	k := &keeper{
		cfg:      cfg,
		log:      log,
		socket:   SocketPath(cfg.RunDir, cfg.Key),
		idPath:   IdentityPath(cfg.RunDir, cfg.Key),
		quit:     make(chan struct{}),
		orphaned: make(chan struct{}, 1),
		calls:    map[int64]func([]byte){},
		nextCall: firstCallID,
	}
	if cfg.ForwardPort > 0 {
		fwd, err := startForwarder(cfg, upstream, log)
		if err != nil {
			log.Error().Err(err).Msg("chromium not started")
			return exitFailure
		}
		defer fwd.Close()
	}
	br, err := startBrowser(cfg.Binary, cfg.Args)
	if err != nil {
		log.Error().Err(err).Msg("chromium did not start")
		return exitFailure
	}
	k.br = br
	log.Info().Int("browser_pid", br.pid).Str("binary", cfg.Binary).Msg("chromium started")
	k.reader = k.startHolding(false)
	code := k.serve(sigs)
	k.stop()
	ev := log.Info()
	if k.br.err != nil {
		ev = log.Error().Err(k.br.err)
	}
	ev.Int("browser_pid", br.pid).Int("exit", code).Msg("keeper exiting")
	return code
}

// serve waits for readiness, serves clients until Chromium exits or a signal comes, and returns the exit
// code.
func (k *keeper) serve(sigs <-chan os.Signal) int {
	ready := make(chan string, 1)
	err := k.call("Browser.getVersion", nil, "", func(answer []byte) { ready <- product(answer) })
	if err != nil {
		k.log.Warn().Err(err).Msg("Browser.getVersion not sent")
	}
	select {
	case p := <-ready:
		k.log.Info().Str("product", p).Msg("chromium answered over the pipe")
	case <-k.br.done:
		k.log.Error().Int("status", k.br.status).Msg("chromium exited before it was ready")
		return k.br.status
	case sig := <-sigs:
		return k.shutdown(sig)
	}
	if err := k.listen(); err != nil {
		k.log.Error().Err(err).Msg("keeper socket")
		k.kill()
		return exitFailure
	}
	if err := k.writeIdentity(); err != nil {
		k.log.Error().Err(err).Msg("identity file")
		k.kill()
		return exitFailure
	}
	k.log.Info().Str("socket", k.socket).Str("identity", k.idPath).Msg("keeper ready")
	k.mu.Lock()
	if k.client == nil {
		k.armOrphanLocked()
	}
	k.mu.Unlock()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		k.acceptLoop()
	}()
	select {
	case <-k.br.done:
		k.log.Info().Int("status", k.br.status).Msg("chromium exited")
		return k.br.status
	case sig := <-sigs:
		return k.shutdown(sig)
	case <-k.orphaned:
		return k.shutdown(orphanStop(k.cfg.OrphanStop))
	}
}

// orphanStop is the keeper's own reason to stop Chromium, as a signal would: no client came for the duration.
type orphanStop time.Duration

func (o orphanStop) String() string {
	return "no client for " + time.Duration(o).String() + " (--orphan-stop)"
}
func (orphanStop) Signal() {}

// armOrphanLocked starts the orphan timer, when the keeper has one and it is not running; the pipe has no
// client now. The caller holds mu.
func (k *keeper) armOrphanLocked() {
	if k.cfg.OrphanStop <= 0 || k.orphan != nil {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(k.cfg.OrphanStop, func() {
		k.mu.Lock()
		fire := k.orphan == t && k.client == nil
		k.orphan = nil
		k.mu.Unlock()
		if fire {
			select {
			case k.orphaned <- struct{}{}:
			default:
			}
		}
	})
	k.orphan = t
}

// disarmOrphanLocked stops the orphan timer: a client holds the pipe. The caller holds mu.
func (k *keeper) disarmOrphanLocked() {
	if k.orphan != nil {
		k.orphan.Stop()
		k.orphan = nil
	}
}

// shutdown stops Chromium for a signal: the pipe back from its client (bounded), Browser.close, then SIGTERM
// of its group, then SIGKILL, each step bounded; the exit code is Chromium's status. For the keeper's own
// orphan stop the whole must fit in what is left of a store's lease: Browser.close gets orphanCloseBound, then
// the group gets SIGKILL.
func (k *keeper) shutdown(sig os.Signal) int {
	_, orphan := sig.(orphanStop)
	closeWait := closeBound
	if orphan {
		closeWait = orphanCloseBound
	}
	if k.reclaim(lentBound) {
		k.log.Info().Str("signal", sig.String()).Msg("stopping chromium: Browser.close")
		k.wg.Add(1)
		go func() {
			// Off this goroutine: a pipe Chromium does not read blocks the write, and the bound below must
			// hold anyway. The write ends when Chromium reads it or exits.
			defer k.wg.Done()
			if err := k.call("Browser.close", nil, "", nil); err != nil {
				k.log.Warn().Err(err).Msg("Browser.close not sent")
			}
		}()
		if k.br.waitDone(closeWait) {
			return k.br.status
		}
	} else {
		k.log.Warn().Str("signal", sig.String()).Dur("after", lentBound).Msg("the client did not give the pipe back: no Browser.close")
	}
	if orphan {
		k.log.Warn().Dur("after", closeWait).Msg("chromium still running after Browser.close: SIGKILL to its group (its lease)")
		return k.kill()
	}
	k.log.Warn().Dur("after", closeWait).Msg("chromium still running after Browser.close: SIGTERM to its group")
	if err := k.br.signalGroup(syscall.SIGTERM); err != nil {
		k.log.Warn().Err(err).Msg("SIGTERM")
	}
	if k.br.waitDone(termBound) {
		return k.br.status
	}
	k.log.Warn().Dur("after", termBound).Msg("chromium still running after SIGTERM: SIGKILL to its group")
	return k.kill()
}

// kill SIGKILLs Chromium's group and waits, bounded, for it to be reaped; the exit code is Chromium's
// status, or exitFailure when even that did not end it.
func (k *keeper) kill() int {
	if !k.br.exited() {
		if err := k.br.signalGroup(syscall.SIGKILL); err != nil {
			k.log.Error().Err(err).Msg("SIGKILL")
		}
	}
	if k.br.waitDone(killBound) {
		return k.br.status
	}
	k.log.Error().Dur("after", killBound).Int("browser_pid", k.br.pid).Msg("chromium not reaped after SIGKILL")
	return exitFailure
}

// stop ends everything the keeper runs: no more clients, the socket and identity file removed, the client's
// connection and the keeper's pipe ends closed, every goroutine of the keeper's waited for (Chromium's waiter
// only if it is done).
func (k *keeper) stop() {
	close(k.quit)
	k.mu.Lock()
	k.stopping = true
	c := k.client
	k.mu.Unlock()
	if k.ln != nil {
		k.ln.Close()
	}
	k.removeFiles()
	if c != nil {
		c.nc.Close()
	}
	k.br.toBrowser.Close()
	k.br.fromBrowser.Close()
	k.wg.Wait()
}
