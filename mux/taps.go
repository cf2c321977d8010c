package mux

import "sync/atomic"

// Taps is what a Mux notes on the side of the messages it routes, for the manager (Mux.Taps): the task
// timeline's steps (timeline.go), the texts typed into password fields (passwords.go, personpasswords.go)
// and the signals that the cookie jar may have changed (jar.go). The core calls its hooks on the commands
// and events it routes. Its state is guarded by Mux.mu, except the atomic counters.
type Taps struct {
	noHooks
	m *Mux

	tl       timelineState
	personPw personPasswords // what people typed into password fields of agents' tabs (personpasswords.go)

	jarGen     atomic.Uint64 // JarChanges
	jarScripts atomic.Uint64 // JarScripts
	launches   atomic.Uint64 // Launches
}
