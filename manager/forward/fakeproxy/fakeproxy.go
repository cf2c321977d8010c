// Package fakeproxy runs the upstream proxies that tests of a store's network identity use: an HTTP proxy with Basic
// auth and a SOCKS5 proxy with user/password (RFC 1928, 1929), each resolving names only from its own table, as a
// proxy in another network would, so a name that reaches a site proves DNS was the proxy's.
package fakeproxy

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Proxy is one running fake upstream.
type Proxy struct {
	Addr  string // host:port it listens on
	mu    sync.Mutex
	seen  []string // the targets it was asked for, after a good login
	hosts map[string]string
	close func()
}

func (p *Proxy) saw(target string) {
	p.mu.Lock()
	p.seen = append(p.seen, target)
	p.mu.Unlock()
}

// Targets are the host:port targets it was asked for after a good login, in order.
func (p *Proxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string{}, p.seen...)
}

// resolve maps host:port through the proxy's own names; an unknown name fails as DNS would.
func (p *Proxy) resolve(target string) (string, bool) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return "", false
	}
	if a, ok := p.hosts[host]; ok {
		return net.JoinHostPort(a, port), true
	}
	return "", false
}

// Close stops the proxy; connections it relays end with their peers.
func (p *Proxy) Close() { p.close() }

// StartHTTP is NewHTTP for a test, stopped at its end.
func StartHTTP(t testing.TB, user, pass string, hosts map[string]string) *Proxy {
	t.Helper()
	p, err := NewHTTP(user, pass, hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartSOCKS5 is NewSOCKS5 for a test, stopped at its end.
func StartSOCKS5(t testing.TB, user, pass string, hosts map[string]string) *Proxy {
	t.Helper()
	p, err := NewSOCKS5(user, pass, hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// NewHTTP serves CONNECT and absolute-form requests on loopback for user:pass (any client when user is
// ""), hosts mapping names to addresses.
func NewHTTP(user, pass string, hosts map[string]string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), hosts: hosts}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user != "" && r.Header.Get("Proxy-Authorization") != want {
			w.Header().Set("Proxy-Authenticate", `Basic realm="test"`)
			http.Error(w, "auth", http.StatusProxyAuthRequired)
			return
		}
		target := r.Host
		if r.Method != http.MethodConnect {
			target = r.URL.Host
			if r.URL.Port() == "" {
				target += ":80"
			}
		}
		addr, ok := p.resolve(target)
		if !ok {
			http.Error(w, "no such host", http.StatusBadGateway)
			return
		}
		p.saw(target)
		if r.Method == http.MethodConnect {
			up, err := net.Dial("tcp", addr)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			down, rw, _ := w.(http.Hijacker).Hijack()
			io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n")
			go func() { io.Copy(up, rw); up.Close() }()
			io.Copy(down, up)
			down.Close()
			return
		}
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.Header.Del("Proxy-Authorization")
		out.URL.Host = addr
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})}
	go srv.Serve(ln)
	p.close = func() { srv.Close() }
	return p, nil
}

// NewSOCKS5 serves CONNECT on loopback for user:pass, hosts mapping names to addresses.
func NewSOCKS5(user, pass string, hosts map[string]string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), hosts: hosts, close: func() { ln.Close() }}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serveSOCKS(c, user, pass)
		}
	}()
	return p, nil
}

func (p *Proxy) serveSOCKS(c net.Conn, user, pass string) {
	defer c.Close()
	br := bufio.NewReader(c)
	head := make([]byte, 2)
	if _, err := io.ReadFull(br, head); err != nil || head[0] != 5 {
		return
	}
	methods := make([]byte, head[1])
	io.ReadFull(br, methods)
	if !strings.ContainsRune(string(methods), 2) {
		c.Write([]byte{5, 0xff})
		return
	}
	c.Write([]byte{5, 2})
	ver, _ := br.ReadByte()
	ulen, _ := br.ReadByte()
	u := make([]byte, ulen)
	io.ReadFull(br, u)
	plen, _ := br.ReadByte()
	pw := make([]byte, plen)
	io.ReadFull(br, pw)
	if ver != 1 || string(u) != user || string(pw) != pass {
		c.Write([]byte{1, 1})
		return
	}
	c.Write([]byte{1, 0})
	req := make([]byte, 4)
	if _, err := io.ReadFull(br, req); err != nil || req[1] != 1 {
		return
	}
	var host string
	switch req[3] {
	case 1:
		a := make([]byte, 4)
		io.ReadFull(br, a)
		host = net.IP(a).String()
	case 3:
		n, _ := br.ReadByte()
		h := make([]byte, n)
		io.ReadFull(br, h)
		host = string(h)
	default:
		return
	}
	pb := make([]byte, 2)
	io.ReadFull(br, pb)
	target := net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(pb))))
	addr, ok := p.resolve(target)
	var up net.Conn
	var err error
	if ok {
		up, err = net.Dial("tcp", addr)
	}
	if !ok || err != nil {
		c.Write([]byte{5, 4, 0, 1, 0, 0, 0, 0, 0, 0}) // host unreachable
		return
	}
	p.saw(target)
	c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0})
	go func() { io.Copy(up, br); up.Close() }()
	io.Copy(c, up)
}
