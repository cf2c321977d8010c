package keeper

import (
	"errors"
	"io"
	"time"
)

// Parameters of the reset's commands, in the order Chrome's protocol names them.
type (
	autoAttachParams struct {
		AutoAttach             bool `json:"autoAttach"`
		WaitForDebuggerOnStart bool `json:"waitForDebuggerOnStart"`
	}
	discoverParams struct {
		Discover bool `json:"discover"`
	}
	downloadParams struct {
		Behavior string `json:"behavior"`
	}
)

// reset makes the browser connection fresh for the next client once c has gone: c's ids in flight become
// orphans (their answers are dropped), auto-attach and discovery go off first (so no new session races the
// detaches), every session attached through the pipe is detached, and the download behaviour is Chrome's
// default again. It waits, bounded, for Chromium to answer all of it: the next client is served after.
func (k *keeper) reset(c *client, cause error) {
	k.mu.Lock()
	k.client = nil
	dropped := k.orphanLocked(c)
	sessions := k.detachOrderLocked()
	stopping := k.stopping
	k.mu.Unlock()
	ev := k.log.Info().Int("conn", c.num).Int("answers_dropped", dropped)
	if cause != nil && !errors.Is(cause, io.EOF) && !stopping {
		ev = ev.Err(cause)
	}
	if stopping {
		ev.Msg("client disconnected: the keeper is stopping")
		return
	}
	ev = ev.Int("sessions_detached", len(sessions))
	answered := make(chan struct{}, 3+len(sessions)) // one slot per command: an answer never blocks the relay
	ack := func([]byte) { answered <- struct{}{} }
	sent := 0
	send := func(method string, params any, sessionID string, answer func([]byte)) {
		if err := k.call(method, params, sessionID, answer); err != nil {
			k.log.Warn().Err(err).Int("conn", c.num).Msg("reset")
			return
		}
		sent++
	}
	send("Target.setAutoAttach", autoAttachParams{}, "", ack)
	send("Target.setDiscoverTargets", discoverParams{}, "", ack)
	for _, s := range sessions {
		// Answered or refused (a session already gone with its parent), it is no longer attached.
		send("Target.detachFromTarget", detachParams{s.id}, s.parent, func(a []byte) { k.untrack(s.id); ack(a) })
	}
	send("Browser.setDownloadBehavior", downloadParams{"default"}, "", ack)
	ev.Msg("client disconnected")
	t := time.NewTimer(resetBound)
	defer t.Stop()
	for range sent {
		select {
		case <-answered:
		case <-t.C:
			k.log.Warn().Int("conn", c.num).Dur("after", resetBound).Msg("reset not answered in time: serving the next client anyway")
			return
		case <-k.quit:
			return
		case <-k.br.done:
			return
		}
	}
}
