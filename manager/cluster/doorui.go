package cluster

import (
	"context"
	"errors"
	"net"
)

// The door also carries a person's pages (SPEC §19 "One pane"): a host's web UI shows a store placed on another
// host by relaying the person's requests for it, once its own access rules let them through, to that host's
// UI through the door. Such a connection asks for the UI instead of a store (doorRequest.UI) and is handed to
// the UI's side for other hosts, which trusts what the verified peer host says of its person and nothing else:
// only a host with the cluster's certificate gets that far.

// UIHandFunc says whether a door connection for this host's web UI, from the host peer, may go through: an
// error refuses it and the caller is told why; otherwise take hands the connection to the UI, which owns it
// from then on.
type UIHandFunc func(peer string) (take func(net.Conn), err error)

// ServeUI lets the other hosts of the cluster relay their people's requests to this host's web UI through the
// door: hand takes each such connection. Without it they are refused. Call it before Serve.
func (d *DoorServer) ServeUI(hand UIHandFunc) { d.ui = hand }

// route hands a connection let through to what req asks for: a store's endpoint, or this host's web UI.
func (d *DoorServer) route(peer string, req doorRequest) (func(net.Conn), error) {
	switch {
	case !req.UI:
		return d.hand(peer, req.Store)
	case req.Store != "":
		return nil, errors.New("a door request asks for a store or for the web UI, not both")
	case d.ui == nil:
		return nil, errors.New("this host does not serve its web UI to other hosts (its UI is off: VIBE_UI_ADDR=off)")
	}
	return d.ui(peer)
}

// DialUI opens a door connection to the web UI of host, whose door is at addr: the connection carries HTTP
// requests this host's UI relays for its person. The owner's certificate must name host.
func (d *DoorDialer) DialUI(ctx context.Context, host, addr string) (net.Conn, error) {
	return d.dial(ctx, host, addr, doorRequest{UI: true})
}
