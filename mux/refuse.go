package mux

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"vibebrowser/mux/clientid"
)

// refusal is one entry of the table of calls the mux will not forward: they would hurt every tenant of the
// shared browser, or reach past the isolation the mux exists for.
type refusal struct {
	reason string
	// when, if set, limits the refusal to some calls; it runs under mu with the decoded params, so only
	// Target.* and Browser.* entries (the methods whose params the mux decodes) may have one.
	when func(m *Mux, c *conn, p *cmdParams) bool
	// reach, if set, limits the refusal to calls that carry a URL or a local file its rule refuses
	// (weburl.go, localfiles.go) and returns what it refused, or "" to pass. It runs on the client's reader
	// before mu is taken, because it may read the disk or ask the browser.
	reach func(m *Mux, c *conn, b []byte, info msgInfo) string
}

// refusals is the one table of refused calls; each entry says why. A refused call gets a CDP error naming
// the rule and nothing reaches the browser. The operator (the UI's views and human tabs) is not a client:
// none of this applies to it.
var refusals = map[string]refusal{
	"Browser.crash":           {reason: "it crashes the browser every client shares"},
	"Browser.crashGpuProcess": {reason: "it crashes the GPU process of the browser every client shares"},
	"Target.disposeBrowserContext": {
		reason: "only a browser context this client created may be disposed (the default one holds every tenant's tabs and the logged-in profile)",
		when: func(m *Mux, c *conn, p *cmdParams) bool {
			return p.BrowserContextID == "" || !c.cl.contexts[p.BrowserContextID]
		},
	},
	"Target.attachToBrowserTarget":  {reason: "a browser session would bypass the per-client isolation of Target.* and Browser.*"},
	"Target.exposeDevToolsProtocol": {reason: "it hands page script unfiltered, browser-wide CDP"},
	"Target.setRemoteLocations":     {reason: "it changes browser-wide discovery for every client"},
	"Target.sendMessageToTarget":    {reason: "non-flattened sessions are not multiplexed; attach with flatten:true"},
	"Target.attachToTarget": {
		reason: "non-flattened sessions are not multiplexed; attach with flatten:true",
		when:   func(m *Mux, c *conn, p *cmdParams) bool { return p.Flatten == nil || !*p.Flatten },
	},

	// URLs (SPEC §13): every method that opens a URL in a page, or fetches one with a page's rights.
	"Target.createTarget":                {reason: urlRule, reach: urlParam},
	"Page.navigate":                      {reason: urlRule, reach: urlParam},
	"Page.navigateToHistoryEntry":        {reason: urlRule, reach: historyEntry},
	"Network.loadNetworkResource":        {reason: urlRule, reach: urlParam},
	"Fetch.continueRequest":              {reason: urlRule, reach: urlParam},
	"Network.continueInterceptedRequest": {reason: urlRule, reach: urlParam},

	// Local files (SPEC §13): every method that hands the browser a path.
	"DOM.setFileInputFiles":   {reason: fileRule, reach: filesParam},
	"Input.dispatchDragEvent": {reason: fileRule, reach: dragFiles},
	"Page.handleFileChooser":  {reason: fileRule, reach: filesParam}, // gone from current Chrome; older builds take files

	// The profile's extensions and installed apps belong to every tenant; these also take local paths and
	// URLs of their own (loadUnpacked's path, launchFilesInApp's files, install's bundle URL).
	"Extensions.loadUnpacked":       {reason: "it loads local code into the browser every client shares"},
	"Extensions.uninstall":          {reason: "the profile's extensions belong to every client"},
	"Extensions.triggerAction":      {reason: "the profile's extensions belong to every client"},
	"Extensions.getStorageItems":    {reason: "an extension's storage belongs to every client"},
	"Extensions.setStorageItems":    {reason: "an extension's storage belongs to every client"},
	"Extensions.removeStorageItems": {reason: "an extension's storage belongs to every client"},
	"Extensions.clearStorageItems":  {reason: "an extension's storage belongs to every client"},
	"PWA.install":                   {reason: "it installs an app, from any URL or local bundle, into the profile every client shares"},
	"PWA.uninstall":                 {reason: "the profile's installed apps belong to every client"},
	"PWA.launch":                    {reason: "the profile's installed apps belong to every client"},
	"PWA.launchFilesInApp":          {reason: "it hands local files to an installed app of the profile every client shares"},
	"PWA.openCurrentPageInApp":      {reason: "the profile's installed apps belong to every client"},
	"PWA.changeAppUserSettings":     {reason: "the profile's installed apps belong to every client"},
}

// refuse answers a call that the table refuses outright or by its reach rule, before mu is taken, and
// reports whether it did; entries limited by when are routeLocked's.
func (m *Mux) refuse(c *conn, b []byte, info msgInfo, id []byte) bool {
	r, ok := refusals[info.method]
	if !ok || r.when != nil {
		return false
	}
	detail := ""
	if r.reach != nil {
		if detail = r.reach(m, c, b, info); detail == "" {
			return false
		}
	}
	m.refusedLog.Warn().Str("client", c.cl.id).Str("method", info.method).Str("detail", detail).Msg("call refused")
	c.send(errorFrame(id, info.sessionID, codeServer, refusedMessage(info.method, detail, r)))
	return true
}

// refusedMessage is the CDP error message of a refused call; detail names what it carried, if anything.
func refusedMessage(method, detail string, r refusal) string {
	if detail != "" {
		return method + " is refused by the mux: " + detail + ": " + r.reason
	}
	return method + " is refused by the mux: " + r.reason
}

// urlParam checks params.url (empty: the call changes no URL).
func urlParam(m *Mux, c *conn, b []byte, info msgInfo) string {
	var msg struct {
		Params struct {
			URL string `json:"url"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &msg) != nil || webURL(msg.Params.URL) {
		return "" // bad params are Chrome's to answer
	}
	return msg.Params.URL
}

// historyLookup bounds the mux's own Page.getNavigationHistory before a history navigation.
const historyLookup = 10 * time.Second

// historyEntry checks the URL of the history entry a Page.navigateToHistoryEntry goes to. The entry's URL
// is not in the call, so the mux asks the page first, on the reader of the client that asked: its later
// commands wait, in order, as they would behind Chrome's answer.
func historyEntry(m *Mux, c *conn, b []byte, info msgInfo) string {
	var msg struct {
		Params struct {
			EntryID *int `json:"entryId"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &msg) != nil || msg.Params.EntryID == nil {
		return ""
	}
	m.mu.Lock()
	s := m.sessions[info.sessionID]
	mine := info.sessionID != "" && s != nil && s.owner == c.cl && !sessionHeld(s)
	m.mu.Unlock()
	if !mine {
		return "" // routeLocked refuses it
	}
	ctx, cancel := context.WithTimeout(context.Background(), historyLookup)
	defer cancel()
	res, err := m.opCall(ctx, "Page.getNavigationHistory", nil, info.sessionID)
	if err != nil {
		return "its history entry could not be checked (" + err.Error() + ")"
	}
	var h struct {
		Entries []struct {
			ID  int    `json:"id"`
			URL string `json:"url"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(res, &h); err != nil {
		return "its history entry could not be checked (" + err.Error() + ")"
	}
	for _, e := range h.Entries {
		if e.ID == *msg.Params.EntryID && !webURL(e.URL) {
			return e.URL
		}
	}
	return ""
}

// filesParam checks params.files.
func filesParam(m *Mux, c *conn, b []byte, info msgInfo) string {
	var msg struct {
		Params struct {
			Files []string `json:"files"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &msg) != nil {
		return ""
	}
	return m.checkFiles(c, msg.Params.Files)
}

// dragFiles checks params.data.files of a drag.
func dragFiles(m *Mux, c *conn, b []byte, info msgInfo) string {
	var msg struct {
		Params struct {
			Data struct {
				Files []string `json:"files"`
			} `json:"data"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &msg) != nil {
		return ""
	}
	return m.checkFiles(c, msg.Params.Data.Files)
}

// checkFiles returns the first of files the client may not hand the browser, with why.
func (m *Mux) checkFiles(c *conn, files []string) string {
	if len(files) == 0 {
		return ""
	}
	own := m.ownDirs(c.cl.id)
	for _, f := range files {
		if err := m.files.check(f, own); err != nil {
			return err.Error()
		}
	}
	return ""
}

// ownDirs are the folders under the home that client id's files may come from: its downloads folder (its
// task's, for a --worker slot) and the store's agent area.
func (m *Mux) ownDirs(id string) []string {
	var own []string
	if m.cfg.DownloadDir != "" {
		own = append(own, filepath.Join(m.cfg.DownloadDir, clientid.OwnerDir(id)))
	}
	if m.cfg.AgentDir != "" {
		own = append(own, m.cfg.AgentDir)
	}
	return own
}
