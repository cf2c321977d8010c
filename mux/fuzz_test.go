package mux

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"vibebrowser/mux/cdpwire"
)

// routingHarness is a mux with its tables and queues but no sockets: client "f" owns PAGEF with session
// SF, client "o" owns PAGEO with session SO.
func routingHarness(t testing.TB) (*Mux, *conn) {
	cfg, err := Config{Upstream: "ws://x", Token: "t", Addr: "127.0.0.1:0"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := addParts(&Mux{cfg: cfg, ownCh: make(chan struct{}, 1), pending: map[int32]*pending{}, clients: map[string]*client{},
		targets: map[string]*target{}, sessions: map[string]*session{}})
	m.up = &upstream{q: newSendQueue(1 << 30), failed: true} // failed: frames stay queued for the checks
	for _, id := range []string{"f", "o"} {
		cl := m.clientLocked(id)
		c := &conn{m: m, cl: cl, q: newSendQueue(1 << 30)}
		cl.conn = c
		tg := &target{id: "PAGE" + string(bytes.ToUpper([]byte(id))), typ: "page", owner: cl, info: []byte(`{"targetId":"x","type":"page"}`)}
		m.addTargetLocked(tg)
		sid := "S" + string(bytes.ToUpper([]byte(id)))
		m.sessions[sid] = &session{id: sid, owner: cl, target: tg, root: tg}
	}
	return m, m.clients["f"].conn
}

// FuzzRouting feeds arbitrary client messages to the router. Every message gets exactly one outcome: a
// single forward upstream under a registered int32 id whose answer maps back to the client's id bytes, or
// one answer to the client carrying its id when one is readable. Nothing reaches another client.
func FuzzRouting(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"Runtime.evaluate","params":{"expression":"<a>"},"sessionId":"SF"}`,
		`{"id":2,"method":"Runtime.evaluate","sessionId":"SO"}`,
		`{"id":3,"method":"Target.attachToTarget","params":{"targetId":"PAGEO","flatten":true}}`,
		`{"id":4,"method":"Target.closeTarget","params":{"targetId":"PAGEF"}}`,
		`{"id":5,"method":"Target.getTargets"}`,
		`{"id":6,"method":"Target.setAutoAttach","params":{"autoAttach":true,"flatten":true}}`,
		`{"id":7,"method":"Target.setDiscoverTargets","params":{"discover":true}}`,
		`{"id":8,"method":"Browser.close"}`,
		`{"id":9,"method":"Browser.crash"}`,
		`{"id":10,"method":"Target.createTarget","params":{"url":"about:blank"}}`,
		`{"id":9007199254740993,"method":"Browser.getVersion"}`,
		`{"id":"x","method":"a"}`,
		`{"method":"a"}`,
		`{"id":1`,
		`[]`,
		` { "sessionId" : "S\u0046" , "id" : 11 , "method" : "Page.enable" } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, c := routingHarness(t)
		other := m.clients["o"].conn
		m.handleClient(c, data)
		up := m.up.q.take(nil)
		replies := c.q.take(nil)
		if n := len(other.q.take(nil)); n != 0 {
			t.Fatalf("%q reached another client", data)
		}
		for _, r := range replies {
			b := join(r)
			if !json.Valid(b) {
				t.Fatalf("reply to %q is invalid JSON: %s", data, b)
			}
		}
		info, scanErr := cdpwire.ScanCommand(data)
		valid := scanErr == nil && json.Valid(data)
		var idTok []byte
		if valid && info.HasID() {
			idTok = data[info.IDStart:info.IDEnd]
		}
		if len(up) == 0 && len(replies) == 0 {
			// Only Target.createTarget may wait (one is in flight), and only Browser.close/virtual calls
			// answer without forwarding.
			if m.cr.inFlight == nil {
				t.Fatalf("%q got no outcome", data)
			}
			return
		}
		if len(replies) > 0 && idTok != nil && cdpwire.IsInteger(idTok) && m.cr.inFlight == nil {
			var last struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(join(replies[len(replies)-1]), &last)
			if !bytes.Equal(last.ID, idTok) {
				t.Fatalf("answer to %q carries id %s; want %s", data, last.ID, idTok)
			}
		}
		for _, fr := range up {
			b := join(fr)
			if !json.Valid(b) {
				t.Fatalf("forward of %q is invalid JSON: %s", data, b)
			}
			fi, err := cdpwire.ScanCommand(b)
			if err != nil || !fi.HasID() {
				t.Fatalf("forward of %q unreadable: %s", data, b)
			}
			id, err := strconv.ParseInt(string(b[fi.IDStart:fi.IDEnd]), 10, 64)
			if err != nil || id < 1 || id > math.MaxInt32 {
				t.Fatalf("forward of %q has a non-int32 id: %s", data, b)
			}
			if fi.SessionID == "SO" {
				t.Fatalf("%q was forwarded on another client's session", data)
			}
			p := m.pending[int32(id)]
			if p == nil {
				t.Fatalf("forward of %q under unregistered id %d", data, id)
			}
			if p.kind != kindInternal && !bytes.Equal(p.origID, idTok) {
				t.Fatalf("forward of %q maps back to id %s; want %s", data, p.origID, idTok)
			}
		}
	})
}

func join(f frame) []byte {
	return append(append(append([]byte(nil), f.head...), f.mid...), f.tail...)
}
