package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sync"

	"vibebrowser/mux/cdpwire"
)

// benchFakeKeeper is benchFakeBrowser behind a keeper's socket (SPEC §13): on each connection the keeper's
// hello, then NUL-ended messages both ways, every command answered at once. It returns the mux's Upstream
// for it ("unix:…/keep-bench.sock") and its stop.
func benchFakeKeeper() (string, func(), error) {
	dir, err := os.MkdirTemp("", "vibe-bench-keep-")
	if err != nil {
		return "", nil, err
	}
	socket := filepath.Join(dir, "keep-bench.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{} // guarded by mu; closed on stop
	)
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[nc] = true
			mu.Unlock()
			wg.Go(func() {
				benchServeKeeper(nc)
				mu.Lock()
				delete(conns, nc)
				mu.Unlock()
			})
		}
	})
	stop := func() {
		ln.Close()
		mu.Lock()
		for nc := range conns {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
		os.RemoveAll(dir)
	}
	return "unix:" + socket, stop, nil
}

// benchServeKeeper is one client of the fake keeper: the hello, then an answer to every command, written
// in one buffered write per burst, as benchFakeBrowser does.
func benchServeKeeper(nc net.Conn) {
	defer nc.Close()
	hello, _ := json.Marshal(map[string]cdpwire.Hello{"keeper": {Format: cdpwire.Format, PID: os.Getpid(), BrowserPID: os.Getpid()}})
	if _, err := nc.Write(append(hello, 0)); err != nil {
		return
	}
	out := make(chan []byte, 4096) // the reader rarely waits on the writer below it
	done := make(chan struct{})
	go func() {
		defer close(done)
		bw := bufio.NewWriterSize(nc, 64<<10)
		for b := range out {
			cdpwire.WriteMessage(bw, b)
			if len(out) == 0 && bw.Flush() != nil {
				nc.Close()
				for range out { // the reader ends once the socket is closed
				}
				return
			}
		}
	}()
	br := bufio.NewReaderSize(nc, 64<<10)
	for {
		b, _, err := cdpwire.ReadMessage(br, 256<<20)
		if err != nil {
			break
		}
		if a := benchAnswer(b); a != nil {
			out <- a
		}
	}
	close(out)
	<-done
}
