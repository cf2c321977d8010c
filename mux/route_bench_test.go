package mux

import "testing"

// BenchmarkRouteEval is the mux's own work for one agent's Runtime.evaluate on its page session (the 16-client
// eval rows of task bench): the read, the table and the routing, without sockets.
func BenchmarkRouteEval(b *testing.B) {
	m, c := routingHarness(b)
	msg := []byte(`{"id":1,"method":"Runtime.evaluate","params":{"expression":"document.title","returnByValue":true,"awaitPromise":true},"sessionId":"SF"}`)
	b.ReportAllocs()
	for b.Loop() {
		m.handleClient(c, msg)
		m.up.q.take(nil)
		clear(m.pending)
	}
}

// BenchmarkRouteGetTargets is the same for a judged call, Target.getTargets (browser-use's health check).
func BenchmarkRouteGetTargets(b *testing.B) {
	m, c := routingHarness(b)
	msg := []byte(`{"id":2,"method":"Target.getTargets","params":{}}`)
	b.ReportAllocs()
	for b.Loop() {
		m.handleClient(c, msg)
		m.up.q.take(nil)
		clear(m.pending)
	}
}
