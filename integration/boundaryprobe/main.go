// Package main (boundaryprobe) tries one reach as whatever user runs it and prints what happened as one JSON line
// ({"ok":…,"status":…,"error":…}): the store boundary's integration test runs it as a store's agent user.
//
//	boundaryprobe read PATH                         read a file, or list a folder
//	boundaryprobe dial SOCKET                       connect to a unix socket and ask GET /v1/health
//	boundaryprobe call SOCKET TOKEN METHOD PATH [BODY] one API call, with Authorization: Bearer TOKEN ("-" for none)
//	boundaryprobe ws URL                            open a CDP WebSocket (refused: the answer's status and body)
//	boundaryprobe files URL PATH                    on the CDP URL, hand PATH to a page's file input
//	boundaryprobe raw URL FRAME                     on the CDP URL, send FRAME as one text frame as it is
//	boundaryprobe flip SECONDS KIND:PATH:TARGETS…   re-point PATH at each target in turn (symlink or hardlink)
//	boundaryprobe get URL [NAME:VALUE…]             one HTTP GET with those headers (a cookie taken elsewhere)
//	boundaryprobe serve                             a loopback HTTP server, as an agent's page would be: prints its
//	                                                address, then each request's path and Cookie header, one JSON
//	                                                line each, until it is killed
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/manager/api"
	"vibebrowser/mux/cdpwire"
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
	if len(args) == 1 && args[0] == "serve" {
		serve()
		return
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: boundaryprobe read|dial|call|ws|files|raw|flip|get|serve …")
		os.Exit(2)
	}
	switch args[0] {
	case "read":
		r = read(args[1])
	case "dial":
		// A keeper's socket path may be too long for a socket address: name it through its folder, as the
		// manager does (the connect then needs what a short path would).
		addr, release, err := cdpwire.SockAddr(args[1])
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
	case "raw":
		r = rawFrame(args[1], args[2])
	case "flip":
		r = flip(args[1], args[2:])
	case "get":
		r = get(ctx, args[1], args[2:])
	default:
		fmt.Fprintln(os.Stderr, "unknown probe", args[0])
		os.Exit(2)
	}
	json.NewEncoder(os.Stdout).Encode(r)
}

func failed(err error) result { return result{Error: err.Error()} }

// get sends one GET to url with the headers given as NAME:VALUE, following no redirect.
func get(ctx context.Context, url string, headers []string) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return failed(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Set(name, value)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return failed(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return result{OK: resp.StatusCode < 400, Status: resp.StatusCode, Body: string(body)}
}

// serve is a page an agent serves on a loopback port: it records what a person's browser sends it (the
// cookies above all) and answers a page; with ?img=URL the page shows that picture, as a page that wants
// another origin's screenshots would.
func serve() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		json.NewEncoder(os.Stdout).Encode(failed(err))
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(result{OK: true, Body: "http://" + ln.Addr().String()})
	var mu sync.Mutex // mu guards enc: requests come on goroutines of their own
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		enc.Encode(map[string]string{"path": r.URL.RequestURI(), "cookie": r.Header.Get("Cookie")})
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		img := ""
		if u := r.URL.Query().Get("img"); u != "" {
			img = `<img id="stolen" src="` + html.EscapeString(u) + `">`
		}
		fmt.Fprintf(w, "<!doctype html><title>An agent's page</title><p>an agent's page</p>%s", img)
	}))
}

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
	return onFilePage(url, func(c *cdpConn, session string, node int) result {
		if _, err := c.send("DOM.setFileInputFiles", session, map[string]any{"files": []string{path}, "nodeId": node}); err != nil {
			return failed(err)
		}
		return result{OK: true}
	})
}

// rawFrame opens a page of the client's own with a file input, as files does, then sends frame as one text
// frame exactly as given (keys a Go map cannot hold: repeated, in another case, escaped), with $ID, $SESSION
// and $NODE standing for a fresh id, the page's session and the input's node. It prints the answer: its
// result as body, or its error.
func rawFrame(url, frame string) result {
	return onFilePage(url, func(c *cdpConn, session string, node int) result {
		c.id++
		frame = strings.NewReplacer("$ID", strconv.Itoa(c.id), "$SESSION", session, "$NODE", strconv.Itoa(node)).Replace(frame)
		res, err := c.exchange([]byte(frame))
		if err != nil {
			return failed(err)
		}
		return result{OK: true, Body: string(res)}
	})
}

// onFilePage runs probe on a page of the client's own with a file input #f (session, and the input's node).
func onFilePage(url string, probe func(c *cdpConn, session string, node int) result) result {
	c, err := dialCDP(url)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	session, node, err := c.filePage()
	if err != nil {
		return result{Error: "setting up the page: " + err.Error(), Status: -1}
	}
	return probe(c, session, node)
}

// cdpConn is one CDP WebSocket and the id of its last command.
type cdpConn struct {
	*websocket.Conn
	id int
}

func dialCDP(url string) (*cdpConn, error) {
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	return &cdpConn{Conn: conn}, nil
}

// send sends one command and returns its answer.
func (c *cdpConn) send(method, session string, params any) (json.RawMessage, error) {
	c.id++
	msg := map[string]any{"id": c.id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	return c.exchange(b)
}

// exchange writes frame, a command with id c.id, and reads until its answer.
func (c *cdpConn) exchange(frame []byte) (json.RawMessage, error) {
	if err := c.WriteMessage(websocket.TextMessage, frame); err != nil {
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
		if err := c.ReadJSON(&in); err != nil {
			return nil, err
		}
		if in.ID != c.id {
			continue
		}
		if in.Error != nil {
			return nil, errors.New(in.Error.Message)
		}
		return in.Result, nil
	}
}

// filePage opens a page of the client's own with a file input #f and returns its session and the input's node.
func (c *cdpConn) filePage() (session string, node int, err error) {
	var target struct{ TargetID string }
	raw, err := c.send("Target.createTarget", "", map[string]any{"url": "about:blank"})
	if err == nil {
		err = json.Unmarshal(raw, &target)
	}
	var attached struct{ SessionID string }
	if err == nil {
		raw, err = c.send("Target.attachToTarget", "", map[string]any{"targetId": target.TargetID, "flatten": true})
		if err == nil {
			err = json.Unmarshal(raw, &attached)
		}
	}
	if err == nil {
		_, err = c.send("Runtime.evaluate", attached.SessionID, map[string]any{"expression": `document.body.innerHTML = '<input type="file" id="f">'`})
	}
	var doc struct{ Root struct{ NodeID int } }
	if err == nil {
		raw, err = c.send("DOM.getDocument", attached.SessionID, map[string]any{})
		if err == nil {
			err = json.Unmarshal(raw, &doc)
		}
	}
	var q struct{ NodeID int }
	if err == nil {
		raw, err = c.send("DOM.querySelector", attached.SessionID, map[string]any{"nodeId": doc.Root.NodeID, "selector": "#f"})
		if err == nil {
			err = json.Unmarshal(raw, &q)
		}
	}
	return attached.SessionID, q.NodeID, err
}

// flip re-points paths, as fast as it can until the deadline, each at its targets in turn: a spec is
// KIND:PATH:TARGET,TARGET… with KIND symlink (a symlink to the target) or hardlink (a hard link of it), made
// beside PATH and renamed over it, so PATH always names something. It prints how many flips it made.
func flip(seconds string, specs []string) result {
	secs, err := strconv.Atoi(seconds)
	if err != nil {
		return failed(err)
	}
	type spec struct {
		link    func(target, name string) error
		path    string
		targets []string
	}
	var all []spec
	for _, s := range specs {
		parts := strings.SplitN(s, ":", 3)
		if len(parts) != 3 {
			return failed(fmt.Errorf("flip spec %q is not KIND:PATH:TARGETS", s))
		}
		sp := spec{path: parts[1], targets: strings.Split(parts[2], ",")}
		switch parts[0] {
		case "symlink":
			sp.link = os.Symlink
		case "hardlink":
			sp.link = os.Link
		default:
			return failed(fmt.Errorf("flip kind %q is neither symlink nor hardlink", parts[0]))
		}
		all = append(all, sp)
	}
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	n := 0
	for i := 0; i == 0 || time.Now().Before(deadline); i++ { // one round at least: flip 0 makes each link once
		for _, sp := range all {
			tmp := sp.path + ".flip"
			os.Remove(tmp) // a rename of a name onto another name of the same file leaves it behind
			if err := sp.link(sp.targets[i%len(sp.targets)], tmp); err != nil {
				return failed(err)
			}
			if err := os.Rename(tmp, sp.path); err != nil {
				return failed(err)
			}
			n++
		}
	}
	return result{OK: true, Body: strconv.Itoa(n) + " flips"}
}
