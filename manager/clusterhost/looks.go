package clusterhost

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"vibebrowser/manager/cluster"
	"vibebrowser/mux"
)

// The shots after a task's call on a store of another host are kept on the task's host (SPEC §15, §19): its
// recorder looks at the client's tabs through RemoteTabs, which asks the store's host, through its door, for
// the client's tabs, a picture of each, and the texts it typed into password fields (which the call's entry
// hides). The store's host answers a host only about its own clients: a client whose latest connection came
// through that host's door (mux Operator.ClientHost), and a tab that client owns.

// Bounds of what a look carries.
const (
	tabsAnswerMax      = 1 << 20 // a client's tabs (at most the tab cap's, with their URLs)
	shotMax            = 2 << 20 // one picture: a JPEG 1280 px wide at quality 70 is a few hundred KiB
	passwordsAnswerMax = 256 << 10
	shotWidthMax       = 2560
	lookBound          = 15 * time.Second // one look, the tabs' list or a picture
	passwordsBound     = 2 * time.Second  // the store's host's wait for the mux's look at the fields (timeline.passwordWait)
)

// lookHead is a look's header: the client, and for a picture its tab and size.
type lookHead struct {
	Client  string `json:"client"`
	Tab     string `json:"tab,omitempty"`
	Width   int    `json:"width,omitempty"`
	Quality int    `json:"quality,omitempty"`
}

// RemoteTabs is one client's tabs on a store placed on another host, as the timeline's recorder sees a
// browser (timeline.Browser): each method asks the store's host.
type RemoteTabs struct {
	ch                  *Host
	store, host, client string
}

// Tabs is client's tabs on store key when the store runs on another host, nil when it runs here or nowhere.
// It reads this host's view of the placement only (a call's report waits for no question to the cluster): a
// view that lags after a move asks the old host, which answers that the store does not run there.
func (ch *Host) Tabs(key, client string) *RemoteTabs {
	host := ch.Where(key)
	if host == "" || host == ch.host {
		return nil
	}
	return &RemoteTabs{ch: ch, store: key, host: host, client: client}
}

// ClientTabs lists the client's tabs; nil when the store's host does not answer (no shots then).
func (r *RemoteTabs) ClientTabs(client string) []mux.TabInfo {
	if client != r.client {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.ch.runCtx, lookBound)
	defer cancel()
	b, err := r.ch.exchange(ctx, r.host, r.store, kindTabs, lookHead{Client: client}, nil, 0, tabsAnswerMax)
	var tabs []mux.TabInfo
	if err == nil {
		err = json.Unmarshal(b, &tabs)
	}
	if err != nil {
		r.ch.log.Debug().Err(err).Str("store", r.store).Str("host", r.host).Str("client", client).Msg("no tabs of a client of this host from the store's host")
		return nil
	}
	return tabs
}

// Thumbnail is a picture of tab targetID of the client, taken on the store's host.
func (r *RemoteTabs) Thumbnail(ctx context.Context, targetID string, maxWidth, quality int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, lookBound)
	defer cancel()
	return r.ch.exchange(ctx, r.host, r.store, kindShot, lookHead{Client: r.client, Tab: targetID, Width: maxWidth, Quality: quality},
		nil, 0, shotMax)
}

// PasswordTexts are the texts the client typed into password fields, from the store's host's mux; none when
// it does not answer in time.
func (r *RemoteTabs) PasswordTexts(ctx context.Context, client string) []string {
	if client != r.client {
		return nil
	}
	b, err := r.ch.exchange(ctx, r.host, r.store, kindPasswords, lookHead{Client: client}, nil, 0, passwordsAnswerMax)
	var texts []string
	if err == nil {
		err = json.Unmarshal(b, &texts)
	}
	if err != nil {
		r.ch.log.Warn().Err(err).Str("store", r.store).Str("host", r.host).Str("client", client).
			Msg("the password texts of a client of this host not read from the store's host: its call's entry hides none")
		return nil
	}
	return texts
}

// looked checks a look's header from peer: the store's browser runs here, and the client is peer's (its
// latest connection came through peer's door). It returns the store's mux.
func (ch *Host) looked(peer, store string, head json.RawMessage, h *lookHead) (*mux.Mux, error) {
	if err := decodeHead(head, h); err != nil {
		return nil, err
	}
	in := ch.fleet.Current(store)
	if in == nil {
		return nil, fmt.Errorf("store %s has no browser running on host %s", store, ch.host)
	}
	mx := in.Mux()
	if host, known := mx.Operator().ClientHost(h.Client); !known || host != peer {
		return nil, fmt.Errorf("client %q of store %s is not a client of host %s here: a host looks only at its own "+
			"clients' tabs (those that came through its door)", h.Client, store, peer)
	}
	return mx, nil
}

// answerTabs answers a look at a client's tabs.
func (ch *Host) answerTabs(_ context.Context, peer, store string, head json.RawMessage, _ *cluster.Body) ([]byte, error) {
	var h lookHead
	mx, err := ch.looked(peer, store, head, &h)
	if err != nil {
		return nil, err
	}
	return json.Marshal(mx.Operator().ClientTabs(h.Client))
}

// answerShot answers a look at one of a client's pages: its picture, as the timeline takes a local one.
func (ch *Host) answerShot(ctx context.Context, peer, store string, head json.RawMessage, _ *cluster.Body) ([]byte, error) {
	var h lookHead
	mx, err := ch.looked(peer, store, head, &h)
	if err != nil {
		return nil, err
	}
	if h.Width < 1 || h.Width > shotWidthMax || h.Quality < 1 || h.Quality > 100 {
		return nil, fmt.Errorf("a picture %d px wide at quality %d: the width is 1 to %d, the quality 1 to 100", h.Width, h.Quality, shotWidthMax)
	}
	page := false
	for _, t := range mx.Operator().ClientTabs(h.Client) {
		page = page || t.ID == h.Tab && t.Type == "page" && !t.Human
	}
	if !page {
		return nil, fmt.Errorf("tab %q is no page of client %s's: a host looks only at its clients' own pages", h.Tab, h.Client)
	}
	ctx, cancel := context.WithTimeout(ctx, lookBound)
	defer cancel()
	jpg, err := mx.Operator().Thumbnail(ctx, h.Tab, h.Width, h.Quality)
	if err != nil {
		return nil, err
	}
	if len(jpg) > shotMax {
		return nil, fmt.Errorf("a picture of %d bytes: a shot crosses at most %d", len(jpg), shotMax)
	}
	return jpg, nil
}

// answerPasswords answers a look at the texts a client typed into password fields.
func (ch *Host) answerPasswords(ctx context.Context, peer, store string, head json.RawMessage, _ *cluster.Body) ([]byte, error) {
	var h lookHead
	mx, err := ch.looked(peer, store, head, &h)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, passwordsBound)
	defer cancel()
	return json.Marshal(mx.Taps().PasswordTexts(ctx, h.Client))
}
