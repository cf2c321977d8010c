package keeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// firstCallID is the first id of the keeper's own commands. Clients count from wherever they like (the mux
// from a random point); the keeper sends commands only while it holds the pipe, and drops every answer but its
// own then, so an id a client once used is at worst an answer the keeper drops.
const firstCallID = 2_000_000_000

// errLent: the pipe is lent to a client, which is its only writer.
var errLent = errors.New("the browser's pipe is lent to a client: the keeper writes to it only while it holds it")

// call sends the keeper's own command to Chromium while the keeper holds the pipe. Its answer is the
// keeper's: answered, when not nil, runs on the pipe's reader with it (the slice is valid only during the
// call and answered must not block).
func (k *keeper) call(method string, params any, sessionID string, answered func(answer []byte)) error {
	var p []byte
	if params != nil {
		var err error
		if p, err = json.Marshal(params); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
	}
	k.mu.Lock()
	if k.client != nil {
		k.mu.Unlock()
		return fmt.Errorf("send %s to chromium: %w", method, errLent)
	}
	id := k.nextCall
	k.nextCall++
	if k.nextCall > math.MaxInt32 { // Chrome's ids are 32-bit
		k.nextCall = firstCallID
	}
	k.calls[id] = answered
	k.mu.Unlock()
	msg := append(commandMessage(id, method, p, sessionID), 0)
	k.wmu.Lock()
	_, err := k.br.toBrowser.Write(msg)
	k.wmu.Unlock()
	if err != nil {
		k.mu.Lock()
		delete(k.calls, id)
		k.mu.Unlock()
		return fmt.Errorf("send %s to chromium: %w", method, err)
	}
	return nil
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
