package browsers

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"vibebrowser/manager/chrome"
	"vibebrowser/state"
)

// TestForwarderPort: a proxied store's forwarder keeps its registered port across launches, and gets
// another when a program took that one meanwhile; a store without a proxy gets none.
func TestForwarderPort(t *testing.T) {
	f, _ := fakeFleet(t, nil)
	b := &chromeBackend{cfg: &f.cfg, db: f.db, log: zerolog.Nop()}
	sp := fakeStore(t, f, "Proxied")
	if id, err := b.identity(context.Background(), sp); err != nil || id.ForwardPort != 0 || id.Proxy != "" {
		t.Fatalf("identity without a proxy = %+v, %v; want none", id, err)
	}
	sp.Opts.Proxy, sp.Opts.Timezone = "http://u:pw@127.0.0.1:3128", "Europe/Berlin"
	first, err := b.identity(context.Background(), sp)
	if err != nil || first.ForwardPort == 0 || first.Store != "Proxied" || first.Timezone != "Europe/Berlin" {
		t.Fatalf("identity = %+v, %v; want a forwarder port for the store", first, err)
	}
	again, _ := b.identity(context.Background(), sp)
	if again.ForwardPort != first.ForwardPort {
		t.Errorf("a second launch got port %d; want the registered %d", again.ForwardPort, first.ForwardPort)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(first.ForwardPort))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	moved, err := b.identity(context.Background(), sp)
	if err != nil || moved.ForwardPort == first.ForwardPort || moved.ForwardPort == 0 {
		t.Errorf("with its port taken = %+v, %v; want another port", moved, err)
	}
	if got, _ := f.db.Ports().Lookup(context.Background(), state.ForwardKey(sp.Key)); got != moved.ForwardPort {
		t.Errorf("the registry holds %d; want the new port %d", got, moved.ForwardPort)
	}
	b.cfg.ChromeTransport = chrome.TransportPort
	if _, err := b.identity(context.Background(), sp); err == nil {
		t.Error("a proxied store on the port transport was launched; want it refused")
	}
}
