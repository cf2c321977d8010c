package keeper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"vibebrowser/manager/forward"
	"vibebrowser/manager/netid"
)

// maxProxyLine bounds what the keeper reads of its stdin for the upstream's URL.
const maxProxyLine = 4 << 10

// readUpstream reads the store's upstream proxy URL, the first line of r (the keeper's stdin, which the
// launcher fills and closes).
func readUpstream(r io.Reader) (netid.Proxy, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(r, maxProxyLine), maxProxyLine).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return netid.Proxy{}, fmt.Errorf("read the upstream proxy from stdin: %w", err)
	}
	if line = strings.TrimSpace(line); line == "" {
		return netid.Proxy{}, errors.New("--forward-port needs the upstream proxy's URL as the first line of stdin")
	}
	return netid.ParseProxy(line)
}

// startForwarder serves the store's forwarder on 127.0.0.1:port for this uid's sockets only: Chromium runs
// as the keeper's user. It is bound before Chromium starts, so the browser never finds its proxy missing.
func startForwarder(cfg Config, up netid.Proxy, log zerolog.Logger) (*forward.Forwarder, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.ForwardPort)))
	if err != nil {
		return nil, fmt.Errorf("the proxy forwarder's port: %w", err)
	}
	f := forward.New(forward.Config{Upstream: up, Store: cfg.ForwardStore, AllowUID: os.Getuid(), Log: log})
	go f.Serve(ln) // ends at f.Close
	log.Info().Int("port", cfg.ForwardPort).Str("upstream", up.Redacted()).Msg("proxy forwarder listening")
	return f, nil
}
