package sockowner

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"testing"
)

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"0000000000000000FFFF00000100007F:01BB": "127.0.0.1:443",
	} {
		got, err := parseProcAddr(in)
		if err != nil || got != netip.MustParseAddrPort(want) {
			t.Errorf("parseProcAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "XYZ:1F90", "0100007F:ZZZZ"} {
		if _, err := parseProcAddr(bad); err == nil {
			t.Errorf("parseProcAddr(%q) took it", bad)
		}
	}
}

// A real loopback connection's peer is this process's uid, read from either end: the accepted connection
// (Of) and a request of a net/http server (OfRequest).
func TestOwnerOfLoopbackConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := <-accepted
	if srv == nil {
		t.Fatal("nothing accepted")
	}
	defer srv.Close()
	if uid, err := Of(srv); err != nil || uid != os.Getuid() {
		t.Errorf("Of(accepted) = %d, %v; want %d", uid, err, os.Getuid())
	}

	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid, err := OfRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Write([]byte(strconv.Itoa(uid)))
	}))
	defer h.Close()
	resp, err := http.Get(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if got := string(body); resp.StatusCode != 200 || got != strconv.Itoa(os.Getuid()) {
		t.Errorf("OfRequest = %d %q; want %d", resp.StatusCode, got, os.Getuid())
	}
}
