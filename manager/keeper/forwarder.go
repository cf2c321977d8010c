package keeper

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/forward"
	"vibebrowser/manager/netid"
	"vibebrowser/mux/sys/atomicfile"
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
	status := ForwardStatusPath(cfg.RunDir, cfg.Key)
	os.Remove(status) // a status of the keeper before this one
	f := forward.New(forward.Config{Upstream: up, Store: cfg.ForwardStore, AllowUID: os.Getuid(), Log: log,
		OnChange: func(err error) { writeForwardStatus(status, err, log) }})
	go f.Serve(ln) // ends at f.Close
	log.Info().Int("port", cfg.ForwardPort).Str("upstream", up.Redacted()).Msg("proxy forwarder listening")
	return f, nil
}

// writeForwardStatus records the upstream's failure for the manager, or removes the record once it works.
func writeForwardStatus(path string, err error, log zerolog.Logger) {
	if err == nil {
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			log.Warn().Err(rerr).Msg("forwarder status")
		}
		return
	}
	b, _ := json.Marshal(ForwardStatus{Error: err.Error(), Since: time.Now().UTC()})
	if werr := atomicfile.Write(path, b, 0o600); werr != nil {
		log.Warn().Err(werr).Msg("forwarder status")
	}
}
