package browsers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/logins"
	"vibebrowser/manager/seal"
	"vibebrowser/mux"
	"vibebrowser/mux/cdpwire"
	"vibebrowser/mux/sys/osuser"
)

// A store's login survives its browser (SPEC §18): while the browser runs its cookie jar is checkpointed to
// logins/<slug>/jar whenever it may have changed, and every fresh launch sets back what the browser lost.

// checkpointed reports whether the manager keeps sp's login: every store's, through its mux (SPEC §18, the
// issue's item 6). Where the profile is not the manager's (a Ziniao environment's is Ziniao's, a cdp
// endpoint's someone else's browser), a launch sets back only the cookies the browser lacks, never one it
// holds with another value: a person may have logged in there outside the manager since (restore), and no
// snapshot is taken (ownsProfile).
func checkpointed(Spec) bool { return true }

// The results of a checkpoint, for vibe_login_checkpoints_total.
const (
	checkpointWritten   = "written"
	checkpointUnchanged = "unchanged"
	checkpointFailed    = "failed"
)

// Bounds of the calls through the mux: k.mu is held across them, and a stop waits for the loop's.
const (
	checkpointBound     = 5 * time.Second // one checkpoint of the loop
	lastCheckpointBound = 2 * time.Second // the checkpoint at a clean stop, inside the stop's own bound
	launchedBound       = 8 * time.Second // the restore at a launch, inside the mux's gate (10 s)
)

// loginKeeper checkpoints one browser's cookie jar. It belongs to the browser's mux: made with it
// (attachMux), handed on to a browser relaunched behind it, stopped before the mux is cancelled (close,
// with a last checkpoint at a clean stop). Its loop is the fleet's goroutine.
type loginKeeper struct {
	c     *loginCheckpoints
	sp    Spec
	mx    *mux.Mux     // set before the mux serves
	owner *osuser.User // the browser user, nil for the manager's own
	log   zerolog.Logger
	stop  chan struct{} // closed by close
	done  chan struct{} // closed when run has returned
	once  sync.Once

	mu sync.Mutex
	// mu serialises the checkpoints (the loop's, the last) and a launch's restore, and guards the fields below.
	// launch is the mux's Launches() whose restore is done: a jar read from a browser launched since is the
	// jar that lost what the restore is about to set back, never a checkpoint.
	launch uint64
	pace   logins.Pace
	cp     logins.Checkpointer // its Key is set at the first checkpoint (loginCheckpoints.key)
	failed string              // the last checkpoint's error, logged once until it changes
}

// loginCheckpoints is what the login keepers of every browser share: the seal of the checkpoints, their
// counter (vibe_login_checkpoints_total) and the fleet's configuration, logger and events.
type loginCheckpoints struct {
	cfg     *Config
	log     zerolog.Logger
	note    func(level zerolog.Level, kind, key string, ev api.Event)
	key     func() (*seal.Key, error)
	counter *prometheus.CounterVec // reads of a jar by result (loginKeeper.checkpoint)
	copies  *loginCopier           // where each checkpoint written goes too (SPEC §19); nil on a single host
}

func newLoginCheckpoints(cfg *Config, log zerolog.Logger, note func(zerolog.Level, string, string, api.Event),
	key func() (*seal.Key, error)) *loginCheckpoints {
	c := &loginCheckpoints{cfg: cfg, log: log, note: note, key: key, counter: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vibe_login_checkpoints_total",
		Help: "Reads of a browser's cookie jar for its login checkpoint (SPEC §18), by result: written, unchanged (not rewritten), failed.",
	}, []string{"result"})}
	for _, r := range []string{checkpointWritten, checkpointUnchanged, checkpointFailed} {
		c.counter.WithLabelValues(r)
	}
	return c
}

// keeper makes the login keeper of sp's browser, whose user is owner.
func (c *loginCheckpoints) keeper(sp Spec, owner *osuser.User) *loginKeeper {
	return &loginKeeper{c: c, sp: sp, owner: owner, stop: make(chan struct{}), done: make(chan struct{}),
		log: c.log.With().Str("browser", sp.Key).Logger(),
		cp:  logins.Checkpointer{Home: c.cfg.Home, Slug: sp.Slug, Owner: owner}}
}

// run checkpoints the jar every LoginCheckpoint at most, and only when the mux saw something that may have
// changed it since the last read (logins.Pace), until close or the mux's end.
func (k *loginKeeper) run(served <-chan struct{}) {
	defer close(k.done)
	tick := time.NewTicker(k.c.cfg.LoginCheckpoint)
	defer tick.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-served:
			return
		case <-tick.C:
		}
		k.mu.Lock()
		due := k.pace.Due(time.Now(), k.c.cfg.LoginCheckpoint, k.mx.Taps().JarChanges(), k.mx.Taps().JarScripts())
		k.mu.Unlock()
		if due {
			ctx, cancel := context.WithTimeout(context.Background(), checkpointBound)
			k.checkpointLogged(ctx)
			cancel()
		}
	}
}

// close stops the loop; with last (a clean stop of a live browser) it checkpoints the jar once more.
func (k *loginKeeper) close(last bool) {
	k.once.Do(func() { close(k.stop) })
	<-k.done
	if last {
		ctx, cancel := context.WithTimeout(context.Background(), lastCheckpointBound)
		defer cancel()
		k.checkpointLogged(ctx)
	}
}

func (k *loginKeeper) checkpointLogged(ctx context.Context) {
	_, err := k.checkpoint(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err == nil && k.failed != "":
		k.log.Info().Msg("login checkpoints written again")
		k.failed = ""
	case err != nil && err.Error() != k.failed:
		k.log.Warn().Err(err).Msg("login checkpoint")
		k.failed = err.Error()
	}
}

// checkpoint reads the whole jar through the mux and writes it unless it is the one last written; it
// reports the bytes written (0: unchanged).
func (k *loginKeeper) checkpoint(ctx context.Context) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.checkpointLocked(ctx)
}

// errRestoreDue: the browser was launched since the last restore, which has not run yet.
var errRestoreDue = errors.New("the browser was launched again and its login is not restored yet")

func (k *loginKeeper) checkpointLocked(ctx context.Context) (n int, err error) {
	launch := k.mx.Taps().Launches()
	if launch != k.launch {
		return 0, nil // its restore comes first, then reads again (settle)
	}
	defer func() {
		result := checkpointWritten
		switch {
		case err != nil:
			result = checkpointFailed
		case n == 0:
			result = checkpointUnchanged
		}
		k.c.counter.WithLabelValues(result).Inc()
	}()
	changes, scripts := k.mx.Taps().JarChanges(), k.mx.Taps().JarScripts()
	raw, err := k.mx.Operator().Cookies(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the cookie jar: %w", err)
	}
	if k.mx.Taps().Launches() != launch {
		return 0, errRestoreDue
	}
	if k.cp.Key == nil {
		if k.cp.Key, err = k.c.key(); err != nil {
			return 0, err
		}
	}
	n, err = k.cp.Take(raw, time.Now())
	if err == nil {
		k.pace.Read(time.Now(), changes, scripts, n > 0)
	}
	if err == nil && n > 0 {
		k.c.copies.jarWritten(k.sp)
	}
	return n, err
}

// launched is the mux's Launched hook: on a freshly launched browser, before any client's first command,
// the cookies of the newest checkpoint that the browser lacks (or holds with another value or expiry) are
// set back; then a profile launched before it was portable is carried over (its jar checkpointed now, its
// marker written, so the next launch, portable, sets the cookies back). Nothing here fails the launch: what
// goes wrong is logged, and a checkpoint that does not open is an event.
func (k *loginKeeper) launched(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, launchedBound)
	defer cancel()
	k.mu.Lock()
	defer k.mu.Unlock()
	launch := k.mx.Taps().Launches()
	n, age, err := k.restore(ctx)
	// Checkpoints go on from this browser's jar, read again at once: the restore's cookies are in it now, and
	// a checkpoint that does not open is replaced by it.
	k.launch = launch
	k.pace.Again()
	switch {
	case errors.Is(err, os.ErrNotExist):
	case errors.Is(err, errBrowserCall):
		k.log.Warn().Err(err).Msg("login not restored")
	case err != nil:
		k.log.Warn().Err(err).Msg("login not restored")
		k.c.note(zerolog.WarnLevel, api.EventLoginUnreadable, k.sp.Key, api.Event{Message: fmt.Sprintf(
			"%s: its login checkpoint could not be used, so nothing was set back at this launch (%v); "+
				"the next checkpoint replaces it", k.sp.Name, err)})
	case n > 0:
		k.c.note(zerolog.InfoLevel, api.EventLoginRestored, k.sp.Key, api.Event{Message: fmt.Sprintf(
			"%s: %d cookies set back from its login checkpoint of %s ago", k.sp.Name, n, age.Round(time.Second))})
	}
	profile := k.c.cfg.path("profiles", k.sp.Slug)
	if !ownsProfile(k.sp) || logins.IsPortable(profile) {
		return
	}
	if _, err := k.checkpointLocked(ctx); err != nil {
		k.log.Warn().Err(err).Msg("carrying the profile over to the portable password store: its jar was not read; next launch again")
		return
	}
	if err := logins.MarkPortable(profile, k.owner); err != nil {
		k.log.Warn().Err(err).Msg("carrying the profile over to the portable password store")
		return
	}
	k.log.Info().Msg("profile checkpointed before its switch to the portable password store: the next launch sets its cookies back")
}

// errBrowserCall: the browser did not answer a restore's call (it died, or hangs); the checkpoint is not at fault.
var errBrowserCall = errors.New("the browser did not answer")

// restore sets back what the browser lacks of the newest checkpoint: how many cookies, and the checkpoint's
// age. No checkpoint yet is an error that errors.Is os.ErrNotExist.
func (k *loginKeeper) restore(ctx context.Context) (int, time.Duration, error) {
	key, err := k.c.key()
	if err != nil {
		return 0, 0, err
	}
	content, _, err := logins.ReadJar(key, k.c.cfg.Home, k.sp.Slug)
	if err != nil {
		return 0, 0, err
	}
	jar, err := logins.Decode(content)
	if err != nil {
		return 0, 0, err
	}
	raw, err := k.mx.Operator().Cookies(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: read the cookie jar: %w", errBrowserCall, err)
	}
	have, err := logins.ParseCookies(raw)
	if err != nil {
		return 0, 0, err
	}
	missing := logins.Missing(jar.Cookies, have, time.Now())
	if !ownsProfile(k.sp) {
		missing = logins.Lacking(jar.Cookies, have, time.Now())
	}
	if len(missing) == 0 {
		return 0, 0, nil
	}
	if err := k.mx.Operator().SetCookies(ctx, logins.Params(missing)); err != nil {
		if !errors.As(err, new(*cdpwire.CallError)) {
			return 0, 0, fmt.Errorf("%w: set the cookies back: %w", errBrowserCall, err)
		}
		// Chrome refuses the whole batch for one cookie it cannot parse: set them one by one.
		for _, c := range missing {
			k.mx.Operator().SetCookies(ctx, logins.Params([]logins.Cookie{c}))
		}
	}
	// Chrome drops a cookie it will not take (SameSite=None without Secure, say) without a word: count what
	// the jar holds now.
	if raw, err = k.mx.Operator().Cookies(ctx); err != nil {
		return 0, 0, fmt.Errorf("%w: read the cookie jar: %w", errBrowserCall, err)
	}
	if have, err = logins.ParseCookies(raw); err != nil {
		return 0, 0, err
	}
	still := logins.Missing(missing, have, time.Now())
	if len(still) > 0 {
		k.log.Warn().Int("refused", len(still)).Int("of", len(missing)).Msg("the browser did not take some checkpointed cookies back")
	}
	n := len(missing) - len(still)
	return n, time.Since(jar.Taken), nil
}
