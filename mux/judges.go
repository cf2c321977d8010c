package mux

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The judges of the table of methods (methods.go): each reads the params it judges from the call's paramSet,
// so what it judged is what the mux re-encodes for Chromium.

// call is a client's command on its way through the table.
type call struct {
	cmd command
	ps  *paramSet
	tp  *cmdParams // Target.* and Browser.* params, as routeLocked judges them
}

// params is the call's params, decoded member by member on first use.
func (k *call) params() (*paramSet, error) {
	if k.ps == nil {
		ps, err := parseParams(k.cmd.params)
		if err != nil {
			return nil, err
		}
		k.ps = ps
	}
	return k.ps, nil
}

// cmdParams is the decoded params of a Target.* or Browser.* command.
type cmdParams struct {
	TargetID               string
	SessionID              string
	BrowserContextID       string
	Discover               bool
	AutoAttach             bool
	WaitForDebuggerOnStart bool
	Flatten                *bool
	Filter                 []targetFilter
}

// targetParams reads what routeLocked judges of a Target.* or Browser.* command.
func targetParams(m *Mux, c *conn, k *call) (string, error) {
	ps, err := k.params()
	if err != nil {
		return "", err
	}
	p := &cmdParams{}
	for name, v := range map[string]any{
		"targetId": &p.TargetID, "sessionId": &p.SessionID, "browserContextId": &p.BrowserContextID,
		"discover": &p.Discover, "autoAttach": &p.AutoAttach, "waitForDebuggerOnStart": &p.WaitForDebuggerOnStart,
		"flatten": &p.Flatten,
	} {
		if _, err := ps.read(name, v); err != nil {
			return "", err
		}
	}
	// The filter steers the mux's own virtual discovery and auto-attach, which it never forwards; a
	// session's own setAutoAttach goes with its filter as the strict read validated it.
	if _, err := ps.peek("filter", &p.Filter); err != nil {
		return "", err
	}
	k.tp = p
	return "", nil
}

// attachParams: Target.attachToTarget, flattened sessions only.
func attachParams(m *Mux, c *conn, k *call) (string, error) {
	if _, err := targetParams(m, c, k); err != nil {
		return "", err
	}
	if k.tp.Flatten == nil || !*k.tp.Flatten {
		return "flatten is not true", nil
	}
	return "", nil
}

// createTargetParams: Target.createTarget, its URL by the URL rule.
func createTargetParams(m *Mux, c *conn, k *call) (string, error) {
	if refused, err := urlsParams("url")(m, c, k); refused != "" || err != nil {
		return refused, err
	}
	return targetParams(m, c, k)
}

// contextParams: Target.createBrowserContext without a proxy of the client's choosing (SPEC §20).
func contextParams(m *Mux, c *conn, k *call) (string, error) {
	ps, err := k.params()
	if err != nil {
		return "", err
	}
	for _, name := range []string{"proxyServer", "proxyBypassList"} {
		if ps.has(name) {
			return "it carries " + name, nil
		}
	}
	return targetParams(m, c, k)
}

// urlsParams checks the named URL members by the URL rule (empty: the call changes no URL).
func urlsParams(names ...string) func(m *Mux, c *conn, k *call) (string, error) {
	return func(m *Mux, c *conn, k *call) (string, error) {
		ps, err := k.params()
		if err != nil {
			return "", err
		}
		for _, name := range names {
			u, err := ps.str(name)
			if err != nil {
				return "", err
			}
			if !webURL(u) {
				return u, nil
			}
		}
		return "", nil
	}
}

// historyLookup bounds the mux's own Page.getNavigationHistory before a history navigation.
const historyLookup = 10 * time.Second

// historyEntry checks the URL of the history entry a Page.navigateToHistoryEntry goes to. The entry's URL
// is not in the call, so the mux asks the page first, on the reader of the client that asked: its later
// commands wait, in order, as they would behind Chrome's answer.
func historyEntry(m *Mux, c *conn, k *call) (string, error) {
	ps, err := k.params()
	if err != nil {
		return "", err
	}
	var entry *int
	if _, err := ps.read("entryId", &entry); err != nil || entry == nil {
		return "", err
	}
	sid := k.cmd.sessionID
	m.mu.Lock()
	s := m.sessions[sid]
	mine := s != nil && s.owner == c.cl && !sessionHeld(s)
	m.mu.Unlock()
	if !mine {
		return "", nil // routeLocked refuses it
	}
	ctx, cancel := context.WithTimeout(context.Background(), historyLookup)
	defer cancel()
	res, err := m.op.call(ctx, "Page.getNavigationHistory", nil, sid)
	if err != nil {
		return "its history entry could not be checked (" + err.Error() + ")", nil
	}
	var h struct {
		Entries []struct {
			ID  int    `json:"id"`
			URL string `json:"url"`
		} `json:"entries"`
	}
	if err := decodeStrict(res, &h); err != nil {
		return "its history entry could not be checked (" + err.Error() + ")", nil
	}
	for _, e := range h.Entries {
		if e.ID == *entry && !webURL(e.URL) {
			return e.URL, nil
		}
	}
	return "", nil
}

// filesParam hands the browser the mux's own copies of params.files.
func filesParam(m *Mux, c *conn, k *call) (string, error) {
	ps, err := k.params()
	if err != nil {
		return "", err
	}
	return m.ul.copyFilesMember(c, ps, "files")
}

// dragFiles hands the browser the mux's own copies of params.data.files of a drag.
func dragFiles(m *Mux, c *conn, k *call) (string, error) {
	ps, err := k.params()
	if err != nil {
		return "", err
	}
	data, err := ps.object("data")
	if err != nil || data == nil {
		return "", err
	}
	return m.ul.copyFilesMember(c, data, "files")
}

// copyFilesMember replaces the paths of member name with the mux's copies of the files (fileopen.go), or
// returns the first path the rule refuses, with why.
func (u *uploads) copyFilesMember(c *conn, ps *paramSet, name string) (string, error) {
	var files []string
	if _, err := ps.read(name, &files); err != nil || len(files) == 0 {
		return "", err
	}
	copies := make([]string, len(files))
	for i, f := range files {
		cp, err := u.uploadCopy(c.cl.id, f)
		if err != nil {
			var r *fileRefusal
			if errors.As(err, &r) {
				return r.Error(), nil
			}
			return fmt.Sprintf("%s could not be copied for the browser (%v)", f, err), nil
		}
		copies[i] = cp
	}
	return "", ps.set(name, copies)
}

// streamRule is why a stream handle is refused.
const streamRule = "a client reads and closes only the streams the mux handed it (Page.printToPDF's, " +
	"Fetch.takeResponseBodyAsStream's): stream handles are small numbers, and another's holds another tenant's data"

// streamParam: IO.read and IO.close of a stream handle the mux handed this client.
func streamParam(m *Mux, c *conn, k *call) (string, error) {
	ps, err := k.params()
	if err != nil {
		return "", err
	}
	h, err := ps.str("handle")
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	mine := c.cl.streams[h]
	if mine && k.cmd.method == "IO.close" {
		delete(c.cl.streams, h)
	}
	m.mu.Unlock()
	if !mine {
		return "handle " + fmt.Sprintf("%q", h) + " is not one of this client's streams", nil
	}
	return "", nil
}

// cookieContext: Storage's cookie calls act on a whole browser context's jar. Reading and setting is the
// store's tasks' shared business (the default context, or one of the client's own); clearing only in a
// context the client created.
func cookieContext(m *Mux, c *conn, k *call) (string, error) {
	ps, err := k.params()
	if err != nil {
		return "", err
	}
	ctxID, err := ps.str("browserContextId")
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	own := ctxID != "" && c.cl.contexts[ctxID]
	def := ctxID == "" || m.isDefaultContextLocked(ctxID)
	m.mu.Unlock()
	switch {
	case own:
		return "", nil
	case k.cmd.method == "Storage.clearCookies" && def:
		return "the default browser context", nil
	case !def:
		return "browser context " + ctxID + " is another client's", nil
	}
	return "", nil
}
