package mux

import (
	"fmt"
	"slices"
)

// A client id is one host's (SPEC §19). In a cluster each host's launchers name their tasks, and two hosts may
// name two different tasks alike (each numbering its own); on a store of a third host both would be one mux
// client, each seeing and closing the other's tabs, with its steps and downloads going to whichever host
// connected last. So a client is bound to the host of its first connection (this host's, or another's through
// its door) for as long as it lives here (its connections, its grace, its tabs); a connection of the same id
// from another host is refused, naming the rule. The shared clients (the aux session, every task's) are bound
// to none.

// CloseOtherHost is the WebSocket close code of a connection refused because its client id is another
// host's (one that passed the first check while another host's connection of the id was being upgraded).
const CloseOtherHost = 4410

// otherHostsLocked is why a connection of client id from host ("" for this host) is refused: the id is
// bound to another host; "" when it may connect.
func (m *Mux) otherHostsLocked(id, host string) string {
	cl := m.clients[id]
	if cl == nil || !cl.bound || cl.host == host || slices.Contains(m.cfg.SharedClients, id) {
		return ""
	}
	return fmt.Sprintf("conflict: client %s on this store is a task's of %s, and this connection comes from %s: "+
		"a task id names one task in the whole cluster; give this task an id of its own (the other task's "+
		"ends with its tabs, after its grace period)", id, hostName(cl.host), hostName(host))
}

// hostName names a host for a refusal: "" is the store's own host.
func hostName(host string) string {
	if host == "" {
		return "the store's own host"
	}
	return "host " + host
}
