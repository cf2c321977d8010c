package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrUnreachable is wrapped by every error of a call whose connection to the manager could not be made.
var ErrUnreachable = errors.New("manager unreachable")

// SocketRel is the socket's path relative to the home directory.
const SocketRel = "run/manager.sock"

// SocketPath is the manager's socket under home.
func SocketPath(home string) string { return filepath.Join(home, SocketRel) }

// AgentSocketRel is the agents' socket (SPEC §14) relative to the home directory: any user may connect; it
// serves a task's own calls to the peer that is its store's agent user and presents its task token.
const AgentSocketRel = "run/agent.sock"

// AgentSocketPath is the agents' socket under home.
func AgentSocketPath(home string) string { return filepath.Join(home, AgentSocketRel) }

// TaskTokenEnv is the variable a task's token reaches its agent in (SPEC §14); with it set, the shim and
// vibe-browser mcp call the agents' socket with it.
const TaskTokenEnv = "VIBE_TASK_TOKEN"

// DefaultHome returns $VIBE_HOME, else ~/.vibe-seller.
func DefaultHome() string {
	if h := os.Getenv("VIBE_HOME"); h != "" {
		return h
	}
	return BuiltinHome()
}

// BuiltinHome is the home when VIBE_HOME names none: ~/.vibe-seller.
func BuiltinHome() string {
	dir, err := os.UserHomeDir()
	if err != nil {
		dir = "."
	}
	return filepath.Join(dir, ".vibe-seller")
}

// Client talks to the manager over its unix socket. Its zero value uses the socket of DefaultHome.
//
// It speaks a minimal HTTP/1.1 (one request per connection) over a raw socket instead of using net/http: the
// shim links this package and runs on every agent call, and net and net/http cost it several milliseconds of
// start-up (their package init and the page faults of their memory) on every call.
type Client struct {
	// Socket is the manager's unix socket path; empty means SocketPath(DefaultHome()).
	Socket string
	// Timeout bounds each call when the context has no deadline; zero means no bound beyond the context. It
	// costs no timer (see dial): the shim bounds its calls with it.
	Timeout time.Duration
	// Token is the task token sent as Authorization: Bearer (the agents' socket wants it); "" sends none.
	Token string
}

// NewClient returns a client of the manager listening on socket.
func NewClient(socket string) *Client { return &Client{Socket: socket} }

func (c *Client) socket() string {
	if c.Socket != "" {
		return c.Socket
	}
	return SocketPath(DefaultHome())
}

// HTTP methods the client sends.
const (
	MethodGet    = "GET"
	MethodPost   = "POST"
	MethodPut    = "PUT"
	MethodPatch  = "PATCH"
	MethodDelete = "DELETE"
)

// Do sends method path with body encoded as JSON (nil for none) and decodes a 2xx answer into out (nil to
// discard it). A non-2xx answer is returned as *Error; a failed dial wraps ErrUnreachable.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var req []byte
	if body != nil {
		payload, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		req = append(requestBuffer(len(payload)), payload...)
	}
	data, err := c.send(ctx, method, path, req)
	if err != nil {
		return err
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// Raw sends GET path and returns a 2xx answer's body as it came (an HTML file, an image). Its errors are
// Do's.
func (c *Client) Raw(ctx context.Context, path string) ([]byte, error) {
	return c.send(ctx, MethodGet, path, nil)
}

// send is one call, req a requestBuffer holding its JSON body (nil for none): the answer's body when its
// status is 2xx.
func (c *Client) send(ctx context.Context, method, path string, req []byte) ([]byte, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	status, data, err := conn.roundTrip(method, path, c.Token, req)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if status/100 != 2 {
		e := &Error{Status: status}
		if json.Unmarshal(data, e) != nil || e.Message == "" {
			e.Message = string(bytes.TrimSpace(data))
			if e.Message == "" {
				e.Message = fmt.Sprintf("HTTP %d", status)
			}
		}
		return nil, e
	}
	return data, nil
}

// dial connects to the manager's socket, bounded by the context's deadline or else by c.Timeout from now; an
// error says whether it runs and wraps ErrUnreachable. The bound needs no timer: the socket's own timeouts
// enforce it (unixConn), which spares a shim's call the runtime's timer and poller set-up.
func (c *Client) dial(ctx context.Context) (*unixConn, error) {
	deadline, ok := ctx.Deadline()
	if !ok && c.Timeout > 0 {
		deadline = time.Now().Add(c.Timeout)
	}
	conn, err := dialUnix(ctx, c.socket(), deadline)
	if err != nil {
		return nil, fmt.Errorf("is the manager running? (%s): %w: %w", c.socket(), ErrUnreachable, err)
	}
	return conn, nil
}

// post is send without the answer: the request is written whole and the connection closed, and the
// manager acts on it after the caller has gone. For a report whose answer would change nothing.
func (c *Client) post(ctx context.Context, method, path string, req []byte) error {
	conn, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.writeRequest(method, path, c.Token, req); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// Health asks whether the manager is up.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.Do(ctx, MethodGet, PathHealth, nil, &h)
	return h, err
}

// EnsureSession makes the requested browser ready and returns the endpoint the caller must use. It is the
// shim's call on every agent call, so its JSON is written and read by hand (shimwire.go).
func (c *Client) EnsureSession(ctx context.Context, req EnsureRequest) (EnsureResponse, error) {
	var out EnsureResponse
	data, err := c.send(ctx, MethodPost, PathSessionEnsure, req.appendJSON(requestBuffer(256)))
	if err != nil || len(data) == 0 {
		return out, err
	}
	if err := out.decode(data); err != nil {
		return EnsureResponse{}, fmt.Errorf("%s %s: decode answer: %w", MethodPost, PathSessionEnsure, err)
	}
	return out, nil
}

// ReportEvent sends ev to the manager.
func (c *Client) ReportEvent(ctx context.Context, ev Event) error {
	return c.Do(ctx, MethodPost, PathEvents, ev, nil)
}

// Events returns the manager's recent events, oldest first.
func (c *Client) Events(ctx context.Context) ([]Event, error) {
	var out []Event
	err := c.Do(ctx, MethodGet, PathEvents, nil, &out)
	return out, err
}

func storePath(ref string) string { return PathStores + "/" + pathSegment(ref) }

// Status returns the daemon's whole picture.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.Do(ctx, MethodGet, PathStatus, nil, &s)
	return s, err
}

// ListStores returns every store.
func (c *Client) ListStores(ctx context.Context) ([]Store, error) {
	var s []Store
	err := c.Do(ctx, MethodGet, PathStores, nil, &s)
	return s, err
}

// CreateStore adds a store (and writes its wrapper).
func (c *Client) CreateStore(ctx context.Context, spec StoreSpec) (Store, error) {
	var s Store
	err := c.Do(ctx, MethodPost, PathStores, spec, &s)
	return s, err
}

// GetStore returns the store named by ref (name, slug or id).
func (c *Client) GetStore(ctx context.Context, ref string) (Store, error) {
	var s Store
	err := c.Do(ctx, MethodGet, storePath(ref), nil, &s)
	return s, err
}

// UpdateStore changes the store named by ref.
func (c *Client) UpdateStore(ctx context.Context, ref string, u StoreUpdate) (Store, error) {
	var s Store
	err := c.Do(ctx, MethodPatch, storePath(ref), u, &s)
	return s, err
}

// DeleteStore stops the store's browser and removes the store, its wrapper and its port.
func (c *Client) DeleteStore(ctx context.Context, ref string) error {
	return c.Do(ctx, MethodDelete, storePath(ref), nil, nil)
}

// StoreBrowser starts, stops or ensures the browser of the store named by ref.
func (c *Client) StoreBrowser(ctx context.Context, ref, action string) (Store, error) {
	var s Store
	err := c.Do(ctx, MethodPost, storePath(ref)+"/browser/"+pathSegment(action), nil, &s)
	return s, err
}

// WebBrowser starts or stops the store-less web browser.
func (c *Client) WebBrowser(ctx context.Context, action string) (WebBrowser, error) {
	var b WebBrowser
	err := c.Do(ctx, MethodPost, "/v1/web/"+pathSegment(action), nil, &b)
	return b, err
}

// Web returns the store-less web browser and its endpoints, starting nothing.
func (c *Client) Web(ctx context.Context) (WebBrowser, error) {
	var b WebBrowser
	err := c.Do(ctx, MethodGet, PathWeb, nil, &b)
	return b, err
}

// PutTask records a task's status (and store), creating the task if needed.
func (c *Client) PutTask(ctx context.Context, id string, u TaskUpdate) (Task, error) {
	var t Task
	err := c.Do(ctx, MethodPut, PathTasks+"/"+pathSegment(id), u, &t)
	return t, err
}

// GetTask returns one task.
func (c *Client) GetTask(ctx context.Context, id string) (Task, error) {
	var t Task
	err := c.Do(ctx, MethodGet, PathTasks+"/"+pathSegment(id), nil, &t)
	return t, err
}

// ListTasks returns every task.
func (c *Client) ListTasks(ctx context.Context) ([]Task, error) {
	var t []Task
	err := c.Do(ctx, MethodGet, PathTasks, nil, &t)
	return t, err
}

// DeleteTask forgets a task and stops its browser-use daemons.
func (c *Client) DeleteTask(ctx context.Context, id string) error {
	return c.Do(ctx, MethodDelete, PathTasks+"/"+pathSegment(id), nil, nil)
}

// WriteWrappers regenerates every wrapper.
func (c *Client) WriteWrappers(ctx context.Context) error {
	return c.Do(ctx, MethodPost, PathWrappers, nil, nil)
}

// Reap runs one daemon-reaper pass now.
func (c *Client) Reap(ctx context.Context) (ReapResult, error) {
	var r ReapResult
	err := c.Do(ctx, MethodPost, PathReap, nil, &r)
	return r, err
}

// ListDownloads returns the finished downloads of a task and/or a store (name, slug, id, or "web"); empty
// arguments select everything.
func (c *Client) ListDownloads(ctx context.Context, task, store string) ([]Download, error) {
	path, sep := PathDownloads, "?"
	for _, q := range [][2]string{{"task", task}, {"store", store}} {
		if q[1] != "" {
			path += sep + q[0] + "=" + pathSegment(q[1])
			sep = "&"
		}
	}
	var d []Download
	err := c.Do(ctx, MethodGet, path, nil, &d)
	return d, err
}

// MintTaskToken registers task id on store (a name, slug or id, or WebSlug) and mints its token; only the
// manager's own socket serves it.
func (c *Client) MintTaskToken(ctx context.Context, id, store string) (TaskToken, error) {
	var out TaskToken
	err := c.Do(ctx, MethodPost, taskPath(PathTaskToken, id), TaskTokenRequest{Store: store}, &out)
	return out, err
}

// UILogin mints a one-time login code for the web UI.
func (c *Client) UILogin(ctx context.Context) (UILogin, error) {
	var l UILogin
	err := c.Do(ctx, MethodPost, PathUILogin, nil, &l)
	return l, err
}

// pathSegment percent-encodes s for one path segment: every byte outside RFC 3986's unreserved set is
// escaped, so a store name with "/", "?", "#" or spaces stays one segment. (Not net/url: the shim links
// this package, and net/url's imports cost it half a millisecond per call.)
func pathSegment(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// StoreLogin starts the store's browser if needed, opens a human tab at url in it and returns a login
// link to the tab's live view.
func (c *Client) StoreLogin(ctx context.Context, ref, url string) (StoreLogin, error) {
	var l StoreLogin
	err := c.Do(ctx, MethodPost, storePath(ref)+"/login", StoreLoginRequest{URL: url}, &l)
	return l, err
}
