package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// relayProcessArg starts this binary as a relay process instead of the benchmarks: os.Args[2] is the
// browser's WebSocket URL, the relay's own URL goes to stdout, and it exits when its stdin closes.
const relayProcessArg = "relay-process"

// benchStartRelayProcess is benchStartRelay in a process of its own: the dumb hop as one is deployed (the
// seed's CDP proxy was a process), and as the keeper is, so a row can set a process hop beside a process hop.
func benchStartRelayProcess(upstream string) (string, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(self, relayProcessArg, upstream)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("relay process: %w", err)
	}
	stop := func() { stdin.Close(); cmd.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("relay process: no URL: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// relayProcessMain serves benchStartRelay's relay until stdin closes.
func relayProcessMain(upstream string) {
	url, stop, err := benchStartRelay(upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay process:", err)
		os.Exit(1)
	}
	fmt.Println(url)
	io.Copy(io.Discard, os.Stdin)
	stop()
}
