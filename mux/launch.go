package mux

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The launch hook: Hooks.Launched runs on a freshly launched browser while clients' commands wait at a
// gate, so what it sets is in before any client's first command.

// launchGateWait bounds how long clients' commands wait for Hooks.Launched: a hook that hangs delays them,
// never stops them.
const launchGateWait = 10 * time.Second

// launchGate is the gate clients' commands wait at while Hooks.Launched runs: the one of the browser's
// latest launch, nil before the first.
type launchGate struct {
	m   *Mux
	cur atomic.Pointer[gate]
}

// gate holds clients' commands back while Hooks.Launched runs on a freshly launched browser.
type gate struct {
	open chan struct{}
	once sync.Once
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// startLocked runs Hooks.Launched on a freshly launched browser's connection, with clients' commands held
// at the gate until it returns (or launchGateWait passes). The caller holds mu and has just set m.up. The
// hook's calls end with the connection (pending calls fail as Browser disconnected) or with ctx.
func (lg *launchGate) startLocked(ctx context.Context) {
	m := lg.m
	m.taps.launches.Add(1)
	g := &gate{open: make(chan struct{})}
	lg.cur.Store(g)
	timer := time.AfterFunc(launchGateWait, func() {
		m.log.Warn().Msg("the launch hook is still running: clients' commands go ahead")
		g.release()
	})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer g.release()
		defer timer.Stop()
		m.cfg.Hooks.Launched(ctx)
	}()
}

// wait holds a client's command while the launch hook runs (one atomic load otherwise).
func (lg *launchGate) wait() {
	if g := lg.cur.Load(); g != nil {
		<-g.open
	}
}
