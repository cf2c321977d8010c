// Package main (boundaryprobe) tries one reach as whatever user runs it and prints what happened as one JSON line
// ({"ok":…,"status":…,"error":…}): the store boundary's integration test runs it as a store's agent user.
//
//	boundaryprobe read PATH                         read a file, or list a folder
//	boundaryprobe dial SOCKET                       connect to a unix socket and ask GET /v1/health
//	boundaryprobe call SOCKET TOKEN METHOD PATH [BODY] one API call, with Authorization: Bearer TOKEN ("-" for none)
//	boundaryprobe ws URL                            open a CDP WebSocket (refused: the answer's status and body)
//	boundaryprobe files URL PATH                    on the CDP URL, hand PATH to a page's file input
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/manager/api"
	"vibebrowser/mux/pipewire"
)

type result struct {
	OK     bool   `json:"ok"`
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	Body   string `json:"body,omitempty"`
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var r result
	args := os.Args[1:]
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: boundaryprobe read|dial|call|ws|files …")
		os.Exit(2)
	}
	switch args[0] {
	case "read":
		r = read(args[1])
	case "dial":
		// A keeper's socket path may be too long for a socket address: name it through its folder, as the
		// manager does (the connect then needs what a short path would).
		addr, release, err := pipewire.SockAddr(args[1])
		if err != nil {
			r = failed(err)
			break
		}
		r = call(ctx, addr, "-", api.MethodGet, api.PathHealth, "")
		release()
	case "call":
		body := ""
		if len(args) > 5 {
			body = args[5]
		}
		r = call(ctx, args[1], args[2], args[3], args[4], body)
	case "ws":
		r = dialWS(args[1])
	case "files":
		r = files(args[1], args[2])
	default:
		fmt.Fprintln(os.Stderr, "unknown probe", args[0])
		os.Exit(2)
	}
	json.NewEncoder(os.Stdout).Encode(r)
}

func failed(err error) result { return result{Error: err.Error()} }

func read(path string) result {
	fi, err := os.Stat(path)
	if err != nil {
		return failed(err)
	}
	if fi.IsDir() {
		if _, err := os.ReadDir(path); err != nil {
			return failed(err)
		}
		return result{OK: true}
	}
	if _, err := os.ReadFile(path); err != nil {
		return failed(err)
	}
	return result{OK: true}
}

func call(ctx context.Context, socket, token, method, path, body string) result {
	c := &api.Client{Socket: socket}
	if token != "-" {
		c.Token = token
	}
	var in any
	if body != "" {
		in = json.RawMessage(body)
	}
	var out json.RawMessage
	err := c.Do(ctx, method, path, in, &out)
	var apiErr *api.Error
	switch {
	case errors.As(err, &apiErr):
		return result{Status: apiErr.Status, Error: apiErr.Message}
	case err != nil:
		return failed(err)
	}
	return result{OK: true, Status: http.StatusOK, Body: string(out)}
}

func dialWS(url string) result {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, NetDial: (&net.Dialer{}).Dial}
	conn, resp, err := d.Dial(url, nil)
	if err != nil {
		r := failed(err)
		if resp != nil { // a refusal before the upgrade: its status and message
			r.Status = resp.StatusCode
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			r.Body = string(body)
		}
		return r
	}
	conn.Close()
	return result{OK: true, Status: http.StatusSwitchingProtocols}
}

// files opens a page of the client's own, puts a file input in it and hands it path.
func files(url, path string) result {
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		return failed(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	id := 0
	send := func(method, session string, params any) (json.RawMessage, error) {
		id++
		msg := map[string]any{"id": id, "method": method, "params": params}
		if session != "" {
			msg["sessionId"] = session
		}
		if err := conn.WriteJSON(msg); err != nil {
			return nil, err
		}
		for {
			var in struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := conn.ReadJSON(&in); err != nil {
				return nil, err
			}
			if in.ID != id {
				continue
			}
			if in.Error != nil {
				return nil, errors.New(in.Error.Message)
			}
			return in.Result, nil
		}
	}
	var target struct{ TargetID string }
	raw, err := send("Target.createTarget", "", map[string]any{"url": "about:blank"})
	if err == nil {
		err = json.Unmarshal(raw, &target)
	}
	var attached struct{ SessionID string }
	if err == nil {
		raw, err = send("Target.attachToTarget", "", map[string]any{"targetId": target.TargetID, "flatten": true})
		if err == nil {
			err = json.Unmarshal(raw, &attached)
		}
	}
	if err == nil {
		_, err = send("Runtime.evaluate", attached.SessionID, map[string]any{"expression": `document.body.innerHTML = '<input type="file" id="f">'`})
	}
	var doc struct{ Root struct{ NodeID int } }
	if err == nil {
		raw, err = send("DOM.getDocument", attached.SessionID, map[string]any{})
		if err == nil {
			err = json.Unmarshal(raw, &doc)
		}
	}
	var node struct{ NodeID int }
	if err == nil {
		raw, err = send("DOM.querySelector", attached.SessionID, map[string]any{"nodeId": doc.Root.NodeID, "selector": "#f"})
		if err == nil {
			err = json.Unmarshal(raw, &node)
		}
	}
	if err != nil {
		return result{Error: "setting up the page: " + err.Error(), Status: -1}
	}
	if _, err := send("DOM.setFileInputFiles", attached.SessionID, map[string]any{"files": []string{path}, "nodeId": node.NodeID}); err != nil {
		return failed(err)
	}
	return result{OK: true}
}
