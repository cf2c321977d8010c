package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/chrome"
)

// benchPipe is SPEC §8's "Over a pipe": the mux on a Chromium's pipe (lent by its keeper), side by side in
// one run with direct TCP and a plain relay over TCP to a Chromium of the same build launched with a port,
// the same relay in a process of its own (the hop the keeper was before it lent the pipe), and the mux on
// that port (the port transport's row).
func benchPipe(ctx context.Context, env *benchEnv) ([]Row, error) {
	if env.chromium == "" {
		return []Row{{Group: "pipe", Name: "pipe rows skipped: no Chromium installed"}}, nil
	}
	// Both Chromiums come from the launcher with the same options, one on a port and one on the pipe: the
	// rows compare transports, not two sets of flags.
	launch := func(transport chrome.Transport, name string) (*chrome.Process, error) {
		return chrome.Launch(ctx, chrome.Options{
			Binary:     env.chromium,
			ProfileDir: filepath.Join(env.tmp, name+"-profile"),
			Headless:   true,
			NoSandbox:  os.Geteuid() == 0,
			Transport:  transport,
			Keeper:     []string{env.vibe, "keep"},
			RunDir:     env.tmp,
			Key:        name,
			Log:        zerolog.Nop(),
		})
	}
	ported, err := launch(chrome.TransportPort, "port")
	if err != nil {
		return nil, fmt.Errorf("chromium on a port: %w", err)
	}
	defer ported.Stop(context.Background())
	chr := struct{ http, ws string }{ported.HTTPEndpoint(), ported.WSEndpoint()}
	kept, err := launch(chrome.TransportPipe, "bench")
	if err != nil {
		return nil, fmt.Errorf("chromium on the pipe: %w", err)
	}
	defer kept.Stop(context.Background())
	_, muxURL, stopMux, err := benchStartMux(chr.http)
	if err != nil {
		return nil, err
	}
	defer stopMux()
	_, pipeURL, stopPipe, err := benchStartMux(kept.Endpoint())
	if err != nil {
		return nil, fmt.Errorf("mux over the keeper: %w", err)
	}
	defer stopPipe()
	relayURL, stopRelay, err := benchStartRelay(chr.ws)
	if err != nil {
		return nil, err
	}
	defer stopRelay()
	procURL, stopProc, err := benchStartRelayProcess(chr.ws)
	if err != nil {
		return nil, err
	}
	defer stopProc()
	modes := benchModes{names: []string{"direct", "relay", "relay process", "mux", "mux pipe"},
		urls: map[string]string{"direct": chr.ws, "relay": relayURL, "relay process": procURL, "mux": muxURL, "mux pipe": pipeURL}}

	var rows []Row
	for _, method := range []string{"version", "eval"} {
		for _, n := range []int{1, 16} {
			calls := latencyCalls
			if n > 1 {
				calls = latencyCalls16
			}
			samples, elapsed, err := modes.rounds(ctx, method, n, calls)
			if err != nil {
				return nil, err
			}
			p50 := map[string]time.Duration{}
			thr := map[string]float64{}
			for _, mode := range modes.names {
				a, b, c := percentiles(samples[mode])
				p50[mode], thr[mode] = a, float64(len(samples[mode]))/elapsed[mode].Seconds()
				rows = append(rows, Row{Group: "pipe", Name: fmt.Sprintf("%s %dc %s", method, n, mode), P50: a, P95: b, P99: c,
					Value: thr[mode], Unit: "calls/s", OK: true})
			}
			// With the keeper out of the data path the mux on the pipe should beat a client straight on
			// Chromium's WebSocket (SPEC §8): no TCP and no WebSocket framing upstream.
			ratio := float64(p50["mux pipe"]) / float64(max(p50["direct"], time.Microsecond))
			rows = append(rows, Row{Group: "pipe", Name: fmt.Sprintf("%s %dc mux pipe / direct WebSocket p50", method, n),
				Value: ratio, Unit: "x direct", Budget: "< 1.0x direct", OK: ratio < 1.0})
			// The budget is against the in-process relay; the relay process is the same hop as the keeper
			// is one, a process between client and browser, and its rows say what that hop costs here.
			for _, relay := range []string{"relay", "relay process"} {
				relayAdd := p50[relay] - p50["direct"]
				for _, mode := range []string{"mux pipe", "mux"} {
					add := p50[mode] - p50["direct"]
					ratio := float64(add) / float64(max(relayAdd, time.Microsecond))
					row := Row{Group: "pipe", Name: fmt.Sprintf("%s %dc added p50: %s %v vs %s %v", method, n, mode,
						add.Round(time.Microsecond), relay, relayAdd.Round(time.Microsecond)), Value: ratio, Unit: "x " + relay, OK: true}
					if mode == "mux pipe" && relay == "relay" {
						row.Budget, row.OK = "<= 1.0x relay", add <= relayAdd
					}
					rows = append(rows, row)
				}
				if n == 16 {
					for _, mode := range []string{"mux pipe", "mux"} {
						tr := thr[mode] / thr[relay]
						row := Row{Group: "pipe", Name: fmt.Sprintf("%s 16c throughput %s/%s", method, mode, relay), Value: tr, Unit: "x " + relay, OK: true}
						if mode == "mux pipe" && relay == "relay" {
							row.Budget, row.OK = ">= 1.0x relay", tr >= 1.0
						}
						rows = append(rows, row)
					}
				}
			}
		}
	}
	big, _, err := modes.rounds(ctx, "big", 1, bigCalls)
	if err != nil {
		return nil, err
	}
	p50 := map[string]time.Duration{}
	for _, mode := range modes.names {
		a, b, c := percentiles(big[mode])
		p50[mode] = a
		rows = append(rows, Row{Group: "pipe", Name: "8MiB response " + mode, P50: a, P95: b, P99: c, OK: true})
	}
	for _, mode := range []string{"mux pipe", "mux", "relay process"} {
		r := float64(p50[mode]) / float64(p50["direct"])
		row := Row{Group: "pipe", Name: "8MiB response " + mode + "/direct p50", Value: r, Unit: "x direct", OK: true}
		if mode == "mux pipe" {
			row.Budget, row.OK = "<= 1.0x direct", r <= 1.0
		}
		rows = append(rows, row)
	}
	return rows, nil
}
