package keeper

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"vibebrowser/mux/cdpwire"
)

// firstCallID is the first id of the keeper's own commands. Clients count from 1 (the mux does), so the two
// meet only after two billion commands of one client; even then an id is never both (newCallIDLocked,
// admit).
const firstCallID = 2_000_000_000

// call sends the keeper's own command to Chromium. Its answer is the keeper's, never a client's: answered,
// when not nil, runs on the browser relay with it (the slice is valid only during the call and answered
// must not block).
func (k *keeper) call(method string, params any, sessionID string, answered func(answer []byte)) error {
	var p []byte
	if params != nil {
		var err error
		if p, err = json.Marshal(params); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
	}
	k.mu.Lock()
	id := k.newCallIDLocked()
	k.calls[id] = answered
	k.mu.Unlock()
	msg := commandMessage(id, method, p, sessionID)
	k.wmu.Lock()
	err := cdpwire.WriteMessage(k.pw, msg)
	if err == nil {
		err = k.pw.Flush()
	}
	k.wmu.Unlock()
	if err != nil {
		k.mu.Lock()
		delete(k.calls, id)
		k.mu.Unlock()
		return fmt.Errorf("send %s to chromium: %w", method, err)
	}
	return nil
}

// newCallIDLocked returns an id for the keeper's own command that no client has in flight.
func (k *keeper) newCallIDLocked() int64 {
	for {
		id := k.nextCall
		k.nextCall++
		if k.nextCall > math.MaxInt32 { // Chrome's ids are 32-bit
			k.nextCall = firstCallID
		}
		_, mine := k.calls[id]
		_, orphan := k.orphans[id]
		busy := false
		if k.client != nil {
			_, busy = k.client.inflight[id]
		}
		if !mine && !orphan && !busy {
			return id
		}
	}
}

// commandMessage is a CDP command; params is JSON or nil.
func commandMessage(id int64, method string, params []byte, sessionID string) []byte {
	b := make([]byte, 0, 64+len(method)+len(params)+len(sessionID))
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	if sessionID != "" {
		b = append(b, `,"sessionId":`...)
		b = appendJSONString(b, sessionID)
	}
	return append(b, '}')
}

// errorMessage is the keeper's error answer to a client's command; id is the command's id token as the
// client wrote it.
func errorMessage(id []byte, sessionID, message string) []byte {
	b := make([]byte, 0, 64+len(id)+len(message)+len(sessionID))
	b = append(b, `{"id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":-32000,"message":`...)
	b = appendJSONString(b, message)
	b = append(b, '}')
	if sessionID != "" {
		b = append(b, `,"sessionId":`...)
		b = appendJSONString(b, sessionID)
	}
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // a string always encodes
	return append(b, enc...)
}

// product is the browser's name and version from a Browser.getVersion answer, for the log.
func product(answer []byte) string {
	var a struct {
		Result struct {
			Product string `json:"product"`
		} `json:"result"`
	}
	json.Unmarshal(answer, &a) // for the log only: a missing product logs as ""
	return a.Result.Product
}
