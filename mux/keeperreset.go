package mux

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"vibebrowser/mux/cdpwire"
)

// The mux's own commands on a pipe its keeper just lent it, one at a time and before the connection is served
// (nothing else reads or writes it yet): the browser's version, then the reset that makes the connection
// fresh. Chromium keeps one connection on its pipe for its whole life, so whatever a mux before this one left
// (sessions, discovery, auto-attach, a download folder) is still there; the keeper does not see the traffic
// any more and cannot undo it, so the mux does.

// maxSessionsPerTarget bounds the detaches of one target's sessions: a mux attaches one per client and one
// of its own, far fewer.
const maxSessionsPerTarget = 256

// pipeExchange sends the mux's commands on a fresh pipe and reads their answers; every other message is
// dropped: Chromium's answers and events to a client before this one.
type pipeExchange struct {
	m  *Mux
	w  io.Writer
	br *bufio.Reader
}

// open makes a lent pipe ready to serve: the rest of a message the keeper stopped inside skipped (skip),
// Browser.getVersion asked for the version object of the mux's /json/version, then the reset (freshen).
func (x *pipeExchange) open(skip bool) (map[string]any, error) {
	if skip {
		if err := cdpwire.SkipRest(x.br); err != nil {
			return nil, fmt.Errorf("the rest of the message the keeper stopped inside: %w", err)
		}
	}
	res, err := x.call("Browser.getVersion", nil)
	if err != nil {
		return nil, err
	}
	version, err := versionObject(res, true)
	if err != nil {
		return nil, fmt.Errorf("Browser.getVersion: %w", err)
	}
	if err := x.freshen(); err != nil {
		return nil, err
	}
	return version, nil
}

// freshen turns auto-attach and discovery off, detaches every session a mux before this one left attached
// (by its target's id: the mux never attaches through Target.attachToBrowserTarget, so a target id reaches
// every session it made, and a session's children go with it), and sets Chrome's download behaviour back to
// its default. The connection then looks new to the mux's rebuild, as a WebSocket's would.
func (x *pipeExchange) freshen() error {
	steps := []struct{ method, params string }{
		{"Target.setAutoAttach", `{"autoAttach":false,"waitForDebuggerOnStart":false,"flatten":true}`},
		{"Target.setDiscoverTargets", `{"discover":false}`},
		{"Browser.setDownloadBehavior", `{"behavior":"default"}`},
	}
	for _, s := range steps {
		_, err := x.call(s.method, []byte(s.params))
		var refused *cdpwire.CallError
		if errors.As(err, &refused) {
			// A browser that refuses one still serves: the rebuild sets what the mux needs anyway.
			x.m.log.Warn().Err(err).Msg("browser pipe: a step of its reset was refused")
			continue
		}
		if err != nil {
			return err
		}
	}
	res, err := x.call("Target.getTargets", []byte(`{"filter":[{}]}`))
	if err != nil {
		return err
	}
	var list struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Attached bool   `json:"attached"`
		} `json:"targetInfos"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		return fmt.Errorf("Target.getTargets: %w", err)
	}
	detached := 0
	for _, t := range list.TargetInfos {
		if !t.Attached {
			continue
		}
		params := append(append([]byte(`{"targetId":`), appendJSONString(nil, t.TargetID)...), '}')
		for range maxSessionsPerTarget {
			_, err := x.call("Target.detachFromTarget", params)
			var refused *cdpwire.CallError
			if errors.As(err, &refused) {
				break // no session of this connection's is left on the target
			}
			if err != nil {
				return err
			}
			detached++
		}
	}
	if detached > 0 {
		x.m.log.Info().Int("sessions_detached", detached).Msg("browser pipe: sessions a mux before this one left detached")
	}
	return nil
}

// call sends one command and returns its result once Chromium answers it; a CDP error is a *cdpwire.CallError.
func (x *pipeExchange) call(method string, params []byte) (json.RawMessage, error) {
	x.m.mu.Lock()
	id := strconv.Itoa(int(x.m.newIDLocked())) // the mux's counter: never an id a mux before left in flight
	x.m.mu.Unlock()
	msg := append([]byte(`{"id":`+id+`,"method":`), appendJSONString(nil, method)...)
	if params != nil {
		msg = append(append(msg, `,"params":`...), params...)
	}
	if _, err := x.w.Write(append(msg, '}', 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for {
		b, over, err := cdpwire.ReadMessage(x.br, x.m.cfg.UpstreamMessageLimit)
		if err != nil {
			return nil, fmt.Errorf("no %s answer: %w", method, err)
		}
		info, err := cdpwire.Scan(b)
		if over || err != nil || !info.HasID() || info.HasMethod || string(b[info.IDStart:info.IDEnd]) != id {
			continue // not this command's answer: nobody's
		}
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: its answer: %w", method, err)
		}
		if r.Error != nil {
			return nil, &cdpwire.CallError{Method: method, Code: r.Error.Code, Message: r.Error.Message}
		}
		return r.Result, nil
	}
}
