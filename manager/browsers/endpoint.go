package browsers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"vibebrowser/manager/localapi/answer"
	"vibebrowser/mux"
	"vibebrowser/mux/errdefs"
)

// endpoint is a browser key's mux port, bound for as long as its store exists (the web browser's, as long
// as the manager runs), so the endpoints `store show` prints answer whether the browser runs or sleeps. Its
// front hands every request to the running browser's mux; while the browser is stopped it answers discovery
// from what the mux last knew and wakes the browser for a WebSocket client, the way ensure does. An
// endpoint is never mutated: the slot holds one, or none.
type endpoint struct {
	port   int
	door   mux.Door
	srv    *http.Server
	handed *handedListener // connections another host's door handed over (remote.go)
}

// endpointLocked returns s's endpoint, binding it first when it has none. The caller holds s's lock.
func (f *Fleet) endpointLocked(ctx context.Context, s *slot, sp Spec) (*endpoint, error) {
	if ep := s.ep.Load(); ep != nil {
		return ep, nil
	}
	ln, port, err := f.listenPort(ctx, sp.Key)
	if err != nil {
		return nil, err
	}
	ep := &endpoint{port: port, door: mux.Door{Token: sp.Token, Port: port, TokenUIDs: tokenUIDs()},
		handed: newHandedListener(ln.Addr())}
	ep.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, ConnContext: markHanded,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serveEndpoint(w, r, s, ep) })}
	for _, l := range []net.Listener{ln, ep.handed} {
		f.wg.Go(func() {
			if err := ep.srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				f.log.Error().Err(err).Str("browser", sp.Key).Int("port", port).Msg("endpoint stopped")
			}
		})
	}
	s.ep.Store(ep)
	return ep, nil
}

// tokenUIDs are who the store-token URLs serve (SPEC §20): the manager's own user and root. Every other
// local user connects on a capability URL, which names one client.
func tokenUIDs() []int {
	if uid := os.Getuid(); uid != 0 {
		return []int{uid, 0}
	}
	return []int{0}
}

// Bind binds sp's endpoint unless it is bound, under its store's lock: a store's port is bound for its life.
func (f *Fleet) Bind(ctx context.Context, sp Spec) error {
	s := f.slot(sp.Key)
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	_, err := f.endpointLocked(ctx, s, sp)
	return err
}

// bindEndpoints binds the endpoint of every store and of the web browser, at boot. A port that cannot be
// bound now is logged, not fatal: the next start of that browser tries again.
func (f *Fleet) bindEndpoints(ctx context.Context) error {
	stores, err := f.db.ListStores(ctx)
	if err != nil {
		return err
	}
	web, err := f.WebSpec(ctx)
	if err != nil {
		return err
	}
	specs := []Spec{web}
	for _, s := range stores {
		sp, err := StoreSpec(s)
		if err != nil {
			f.log.Error().Err(err).Str("store", s.ID).Msg("endpoint not bound")
			continue
		}
		specs = append(specs, sp)
	}
	for _, sp := range specs {
		if err := f.Bind(ctx, sp); err != nil {
			f.log.Error().Err(err).Str("browser", sp.Key).Msg("endpoint not bound; the next start of its browser tries again")
		}
	}
	return nil
}

// serveEndpoint is the front of s's endpoint ep. Discovery goes to the running mux, or is answered from
// state while the browser sleeps, so a monitoring probe never wakes a browser the idle sweep stopped; only a
// version never seen starts it. A WebSocket client always goes through ensure (the fast path on a running
// browser), which starts a sleeping browser under the store's lock, bounds and budget, answers their
// refusals before any upgrade, and counts as activity, as a shim's ensure does.
func (f *Fleet) serveEndpoint(w http.ResponseWriter, r *http.Request, s *slot, ep *endpoint) {
	rt, ok := ep.door.Route(w, r)
	if !ok {
		return // refused (a wrong token, an Origin, …) before anything starts
	}
	if f.hooks.Remote != nil && !mux.FromAnotherHost(r.Context()) {
		if dial, elsewhere := f.hooks.Remote(s.key); elsewhere {
			f.relayToHost(w, r, dial) // the store runs on another host (SPEC §19)
			return
		}
	}
	if rt.Kind != mux.RouteClient {
		if in := s.current(); in != nil {
			in.mux.ServeHTTP(w, r)
			return
		}
		if f.answerAsleep(w, r, s.key, ep, rt) {
			return
		}
	}
	in, err := f.ensureIn(r.Context(), s, func(ctx context.Context) (Spec, error) { return f.SpecFor(ctx, s.key) })
	if err != nil {
		f.answerError(w, r, err)
		return
	}
	in.mux.ServeHTTP(w, r)
}

// answerError answers err as the API does (its class's status) and logs it, with the request's token left out.
func (f *Fleet) answerError(w http.ResponseWriter, r *http.Request, err error) {
	answer.Error(w, withoutToken(r), f.log, err)
}

// answerAsleep answers a discovery request of a stopped browser without starting it, and reports whether
// it did: not for /json/version of a browser whose version was never seen.
func (f *Fleet) answerAsleep(w http.ResponseWriter, r *http.Request, key string, ep *endpoint, rt mux.Route) bool {
	if rt.Kind == mux.RouteList {
		ep.door.WriteList(w)
		return true
	}
	raw, err := f.db.Browsers().Version(r.Context(), key)
	if errors.Is(err, errdefs.ErrNotFound) {
		return false
	}
	var v map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil {
		f.answerError(w, r, err)
		return true
	}
	ep.door.WriteVersion(w, r, rt, v)
	return true
}

// withoutToken is r as the error writer logs it: the store's token is a secret, its path is not.
func withoutToken(r *http.Request) *http.Request {
	c := r.WithContext(r.Context())
	u := *r.URL
	_, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	u.Path, u.RawPath = "/<token>/"+rest, ""
	c.URL = &u
	return c
}

// saveVersion keeps mx's version object in state, for key's endpoint to answer discovery from while the
// browser sleeps, after a manager restart too.
func (f *Fleet) saveVersion(key string, mx *mux.Mux) {
	v := mx.Version()
	if v == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := json.Marshal(v)
	if err == nil {
		err = f.db.Browsers().SaveVersion(ctx, key, b)
	}
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) { // ErrNotFound: the store is being removed
		f.log.Error().Err(err).Str("browser", key).Msg("save browser version")
	}
}

// endpointClose bounds an endpoint's shutdown: its front's requests are short (a refusal, a discovery
// answer, an ensure that the closing manager or a removed store refuses at once); upgraded clients are
// the mux's.
const endpointClose = 2 * time.Second

// close unbinds ep and waits, bounded, for the requests its front is answering.
func (ep *endpoint) close() {
	ctx, cancel := context.WithTimeout(context.Background(), endpointClose)
	defer cancel()
	if ep.srv.Shutdown(ctx) != nil {
		ep.srv.Close()
	}
}

// closeEndpoints unbinds every endpoint, at quit, once the muxes have ended.
func (f *Fleet) closeEndpoints() {
	var wg sync.WaitGroup
	for _, s := range f.slots() {
		if ep := s.ep.Swap(nil); ep != nil {
			wg.Go(ep.close)
		}
	}
	wg.Wait()
}

// listenPort binds key's port from the registry on 127.0.0.1. A registered port that another program took
// meanwhile is given up and a fresh one allocated (every endpoint is handed out by the manager, so nothing
// outside it remembers the old number).
func (f *Fleet) listenPort(ctx context.Context, key string) (net.Listener, int, error) {
	for attempt := 0; attempt < 2; attempt++ {
		port, err := f.db.Ports().Allocate(ctx, key, f.cfg.ProxyPortBase, portFree)
		if err != nil {
			return nil, 0, err
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return ln, port, nil
		}
		f.log.Warn().Err(err).Int("port", port).Str("browser", key).Msg("registered port is taken; allocating another")
		if err := f.db.Ports().Release(ctx, key); err != nil {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("%w: no port could be bound for %s", errdefs.ErrUnavailable, key)
}

// portFree is the registry's bind test.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
