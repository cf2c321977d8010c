package mux

// The mux's features (the operator, downloads, uploads, the taps) are types of their own, each with its
// state and files. Their routing halves are not packages: each reads and changes the routing tables'
// targets, clients and sessions under Mux.mu, in the same critical sections as the routing, so a package
// would have to export the core's tables and its lock. What needs none of that is a package the core
// imports: the files side of downloads (mux/downloads).
//
// Each registers with the core for the moments of the routing tables it acts on (feature); the core calls
// the hooks of every registered feature, in the order they registered, under Mux.mu. The events and
// commands a feature handles are handed to it where the core routes them.

// feature is the hook set a feature registers with the core. A feature embeds noHooks and implements the
// hooks it needs.
type feature interface {
	// connectedLocked: a new browser connection is up, its discovery and auto-attach asked for.
	connectedLocked()
	// lostLocked: the browser connection went; the clients' sessions are gone from the tables.
	lostLocked()
	// targetGoneLocked: t is leaving the routing tables (the tab closed, or the browser let go of it).
	targetGoneLocked(t *target)
	// clientGoneLocked: cl's grace period ran out: its tabs are closed and its id forgotten.
	clientGoneLocked(cl *client)
	// closeLocked: the mux shuts down; the clients and the upstream connection are closed.
	closeLocked()
}

// noHooks is a feature's hooks it does not need.
type noHooks struct{}

func (noHooks) connectedLocked()         {}
func (noHooks) lostLocked()              {}
func (noHooks) targetGoneLocked(*target) {}
func (noHooks) clientGoneLocked(*client) {}
func (noHooks) closeLocked()             {}

// addParts makes m's parts of their own: the core's (the creates' queue, the attachments, the launch gate)
// and its features, which it registers in the order of their hooks (the operator ends a closing tab's hold
// before the taps note that it closed).
func addParts(m *Mux) *Mux {
	m.cr = &creates{m: m}
	m.at = &attachments{m: m}
	m.launch = &launchGate{m: m}
	m.ul = &uploads{m: m}
	m.op = &Operator{m: m}
	m.dl = &downloadTracker{m: m}
	m.taps = &Taps{m: m, tl: timelineState{wake: make(chan struct{}, 1)}}
	m.features = []feature{m.ul, m.op, m.dl, m.taps}
	return m
}
