package mux

import (
	"context"
	"encoding/json"
	"fmt"
)

// Human tabs: tabs a person opened through the vibe-browser UI (to log a store in on a headless machine).
// They belong to the reserved client HumanClient, so the ownership rules hide them from every agent and
// the ownership hook persists them; no tab cap applies; and the grace machinery keeps them while someone
// watches one and for the grace period after the last viewer leaves.

// HumanClient is the reserved client id that owns human tabs. No WebSocket may connect as it: /client-human
// is refused with 403 before the upgrade.
const HumanClient = "human"

// DiscoveryClientPrefix starts the random id a client gets that connected on any other WebSocket path than
// /client-<id> (puppeteer or playwright on /json/version's webSocketDebuggerUrl).
const DiscoveryClientPrefix = "anon-"

// humanCreate is a NewHumanTab waiting for its Target.createTarget.
type humanCreate struct {
	url  string
	done chan humanResult // capacity 1: one answer, whether or not the caller still waits
}

type humanResult struct {
	id  string
	err error
}

func (h *humanCreate) finish(id string, err error) { h.done <- humanResult{id, err} }

// NewHumanTab opens a tab at url owned by HumanClient and returns its page's target id. It opens in a
// window of its own, in the background: a background tab of a shared window is hidden and renders nothing
// to watch, and no tab of anyone else loses the front. It takes its turn with the clients' creates,
// which go one at a time so that what Chrome announces meanwhile is attributed without doubt. Unless a
// view keeps it, the grace period of the human client starts (again) now.
func (o *Operator) NewHumanTab(ctx context.Context, url string) (string, error) {
	m := o.m
	if url == "" {
		url = "about:blank"
	}
	h := &humanCreate{url: url, done: make(chan humanResult, 1)}
	m.mu.Lock()
	switch {
	case m.up == nil:
		m.mu.Unlock()
		return "", ErrDisconnected
	case m.cr.inFlight != nil:
		m.cr.queue = append(m.cr.queue, queuedCreate{human: h})
	default:
		o.startHumanCreateLocked(h)
	}
	m.mu.Unlock()
	select {
	case r := <-h.done:
		return r.id, r.err
	case <-ctx.Done():
		return "", ctx.Err() // the tab may still open: it is the human client's, kept for its grace period
	}
}

func (o *Operator) startHumanCreateLocked(h *humanCreate) {
	m := o.m
	rec := &createRec{cl: m.clientLocked(HumanClient)}
	m.cr.inFlight = rec
	o.sendLocked("Target.createTarget", map[string]any{"url": h.url, "background": true, "newWindow": true}, "", func(res []byte, err error) {
		if m.cr.inFlight == rec {
			m.cr.inFlight = nil
		}
		var r struct {
			TargetID string `json:"targetId"`
		}
		if err == nil && (json.Unmarshal(res, &r) != nil || r.TargetID == "") {
			err = fmt.Errorf("mux: Target.createTarget: no target in %s", res)
		}
		if err != nil {
			m.cr.abandonCreateLocked(rec)
			h.finish("", err)
			m.cr.nextCreateLocked()
			return
		}
		human := m.clientLocked(HumanClient) // the same one, unless its grace ended meanwhile
		rec.cl = human
		t := m.targets[r.TargetID]
		if t == nil {
			t = &target{id: r.TargetID, typ: "page"}
			m.addTargetLocked(t)
		}
		m.cr.settleClaimsLocked(rec, t)
		if t.owner == nil && !t.closing {
			m.ownLocked(t, human, nil)
		}
		if human.viewers == 0 && m.cfg.Grace != Off {
			m.startGraceLocked(human)
		}
		h.finish(t.id, nil)
		m.cr.nextCreateLocked()
	})
}

// CloseHumanTab closes a human tab (ErrNotHumanTab for anyone else's).
func (o *Operator) CloseHumanTab(targetID string) error {
	m := o.m
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.targets[targetID]
	if t == nil || t.closing {
		return fmt.Errorf("%w: %s", ErrNoTarget, targetID)
	}
	if t.owner == nil || t.owner.id != HumanClient {
		return fmt.Errorf("%w: %s", ErrNotHumanTab, targetID)
	}
	if m.up == nil {
		return ErrDisconnected
	}
	m.closeTargetLocked(t)
	return nil
}
