package keeper

import (
	"encoding/json"
	"fmt"
	"sort"
)

// What the keeper remembers so the next client gets a fresh browser connection: the ids in flight (whose
// answers belong to one client only), the sessions attached through the pipe (detached when their client
// goes) and the keeper's own commands.

// Methods whose answers or events attach or detach a session.
const (
	attachToTarget        = "Target.attachToTarget"
	attachToBrowserTarget = "Target.attachToBrowserTarget"
	attachedToTarget      = "Target.attachedToTarget"
	detachedFromTarget    = "Target.detachedFromTarget"
)

// maxOrphans bounds the ids gone clients left in flight. Chrome may never answer some (a command of a
// session detached under it), so without a bound they would pile up over many reconnects.
const maxOrphans = 1 << 16

// flight is one id's commands in flight: how many (a client may reuse an id before its answer, and Chrome
// answers each) and whether one attaches a session, whose answer then names it.
type flight struct {
	n      int32
	attach bool
}

// take removes one command of id from m, reporting whether there was one.
func take(m map[int64]flight, id int64) (flight, bool) {
	f, ok := m[id]
	switch {
	case !ok:
	case f.n > 1:
		f.n--
		m[id] = f
	default:
		delete(m, id)
	}
	return f, ok
}

// parseID reads an integer id token; anything else (Chrome accepts only integers) is not an id the keeper
// tracks.
func parseID(tok []byte) (int64, bool) {
	neg := len(tok) > 0 && tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	if len(tok) == 0 || len(tok) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// admit records a client's command as in flight before it is sent, so its answer cannot race the record.
// It refuses an id whose answer would be ambiguous: one a gone client still waits for, or one of the
// keeper's own; the refusal is the error's message.
func (k *keeper) admit(c *client, id int64, attach bool) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.orphans[id]; ok {
		return fmt.Sprintf("keeper: id %d is still in flight from the keeper's previous client: its answer would be taken for this command's; use another id", id)
	}
	if _, ok := k.calls[id]; ok {
		return fmt.Sprintf("keeper: id %d is in use by the keeper's own command; use another id", id)
	}
	f := c.inflight[id]
	f.n++
	f.attach = f.attach || attach
	c.inflight[id] = f
	return ""
}

// orphanLocked moves a gone client's ids in flight to the orphans, whose answers are dropped, and returns
// how many there were.
func (k *keeper) orphanLocked(c *client) int {
	if len(k.orphans)+len(c.inflight) > maxOrphans {
		k.log.Warn().Int("orphans", len(k.orphans)).Msg("too many unanswered ids of gone clients: forgetting them")
		clear(k.orphans)
	}
	n := 0
	for id, f := range c.inflight {
		o := k.orphans[id]
		o.n += f.n
		o.attach = o.attach || f.attach
		k.orphans[id] = o
		n += int(f.n)
	}
	clear(c.inflight)
	return n
}

// routeAnswer takes an answer of Chromium's: the keeper's own command's is consumed here, a client's is
// returned with the client to forward it to, a gone client's is dropped (nil).
func (k *keeper) routeAnswer(idTok, msg []byte) *client {
	id, ok := parseID(idTok)
	if !ok {
		return nil
	}
	k.mu.Lock()
	if answered, ok := k.calls[id]; ok {
		delete(k.calls, id)
		k.mu.Unlock()
		if answered != nil {
			answered(msg)
		}
		return nil
	}
	to := k.client
	var f flight
	if to != nil {
		f, ok = take(to.inflight, id)
	}
	if !ok {
		to = nil
		f, ok = take(k.orphans, id)
	}
	k.mu.Unlock()
	if ok && f.attach {
		var a struct {
			Result struct {
				SessionID string `json:"sessionId"`
			} `json:"result"`
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(msg, &a) == nil && a.Result.SessionID != "" {
			k.attached(a.Result.SessionID, a.SessionID, to)
		}
	}
	return to
}

// routeEvent takes an event of Chromium's, tracking the sessions it attaches and detaches, and returns the
// client to forward it to (nil: none is connected).
func (k *keeper) routeEvent(method, sessionID string, msg []byte) *client {
	if method == attachedToTarget || method == detachedFromTarget {
		var e struct {
			Params struct {
				SessionID string `json:"sessionId"`
			} `json:"params"`
		}
		if json.Unmarshal(msg, &e) == nil && e.Params.SessionID != "" {
			if method == attachedToTarget {
				c := k.current()
				k.attached(e.Params.SessionID, sessionID, c)
				return c
			}
			k.untrack(e.Params.SessionID)
		}
	}
	return k.current()
}

// current is the client being served, nil between clients.
func (k *keeper) current() *client {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.client
}

// attached tracks a session attached for client c (nil: for no one). A session whose client is not the one
// connected once it is tracked belongs to no one and is detached at once; one tracked before its client
// left is in that client's reset.
func (k *keeper) attached(session, parent string, c *client) {
	k.mu.Lock()
	k.sessions[session] = parent
	owned := c != nil && k.client == c
	stopping := k.stopping
	k.mu.Unlock()
	if owned || stopping {
		return
	}
	if err := k.call("Target.detachFromTarget", detachParams{session}, parent, func([]byte) { k.untrack(session) }); err != nil {
		k.log.Warn().Err(err).Str("session", session).Msg("detach of an unowned session not sent")
	}
}

// untrack forgets a session: it was detached.
func (k *keeper) untrack(session string) {
	k.mu.Lock()
	delete(k.sessions, session)
	k.mu.Unlock()
}

type detachParams struct {
	SessionID string `json:"sessionId"`
}

// tracked is a session to detach and the session it was attached through ("": the browser's).
type tracked struct{ id, parent string }

// detachOrderLocked lists the tracked sessions innermost first: a child session is detached through its
// parent, which must still be attached then.
func (k *keeper) detachOrderLocked() []tracked {
	depth := func(s string) int {
		d := 0
		for p := k.sessions[s]; p != "" && d <= len(k.sessions); p = k.sessions[p] {
			d++
		}
		return d
	}
	list := make([]tracked, 0, len(k.sessions))
	depths := make(map[string]int, len(k.sessions))
	for s, p := range k.sessions {
		list = append(list, tracked{s, p})
		depths[s] = depth(s)
	}
	sort.Slice(list, func(i, j int) bool {
		if depths[list[i].id] != depths[list[j].id] {
			return depths[list[i].id] > depths[list[j].id]
		}
		return list[i].id < list[j].id
	})
	return list
}
