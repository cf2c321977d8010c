package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"vibebrowser/mux/cdpwire"
)

// benchFakeKeeper is benchFakeBrowser behind a keeper's socket (SPEC §13): on each connection the keeper's
// hello with a pipe's two ends, then NUL-ended messages both ways on the pipe, every command answered at
// once. It returns the mux's Upstream for it ("unix:…/keep-bench.sock") and its stop.
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

// benchServeKeeper is one client of the fake keeper: the hello with a fresh pipe, then an answer to every
// command on it, written in one buffered write per burst, as benchFakeBrowser does, until the client closes
// its end (or its connection, which stop closes).
func benchServeKeeper(nc net.Conn) {
	defer nc.Close()
	toR, toW, err := os.Pipe()
	if err != nil {
		return
	}
	defer toR.Close()
	fromR, fromW, err := os.Pipe()
	if err != nil {
		toW.Close()
		return
	}
	defer fromW.Close()
	hello, _ := json.Marshal(map[string]cdpwire.Hello{"keeper": {Format: cdpwire.Format, PID: os.Getpid(), BrowserPID: os.Getpid()}})
	err = cdpwire.SendPipe(nc.(*net.UnixConn), hello, toW, fromR, 5*time.Second)
	toW.Close() // the client's copies are the pipe's only ends on its side now
	fromR.Close()
	if err != nil {
		return
	}
	go func() { // the connection's end is the client's going: end the reader below
		nc.Read(make([]byte, 1))
		toR.Close()
	}()
	out := make(chan []byte, 4096) // the reader rarely waits on the writer below it
	done := make(chan struct{})
	go func() {
		defer close(done)
		bw := bufio.NewWriterSize(fromW, 64<<10)
		for b := range out {
			cdpwire.WriteMessage(bw, b)
			if len(out) == 0 && bw.Flush() != nil {
				for range out { // the reader ends once the pipe is closed
				}
				return
			}
		}
	}()
	br := bufio.NewReaderSize(toR, 64<<10)
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
