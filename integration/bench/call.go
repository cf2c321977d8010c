package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/wrapper"
)

const callRuns = 150

// callSettle is the pause before each run. The call's tab is closed after the call is timed (closeTab), and
// Chromium spends the next tens of milliseconds tearing the tab's renderer down, on the same 2 cores.
// Timed inside a call, that teardown slowed every process exiting meanwhile (the fake CLI's own exit took
// 3.1 ms instead of 1.0 ms, and the shim's after it 3.3 ms instead of 0.7 ms), so it charged the wrapper,
// which has two exits, twice; timed inside the next run, it charged whichever variant came next (the fake
// CLI took 12.8 ms instead of 5 ms to start right after a call). The pause is also longer than the mux's
// wait before it persists a removal (100 ms), work after the call, not part of its latency.
const callSettle = 150 * time.Millisecond

// benchCall is SPEC §8's whole agent call: the fake CLI connects, creates a tab, attaches and evaluates
// (FAKEBU_CALL; the tab is closed after the timing), through the generated wrapper and the mux of a real manager, against the same fake CLI with
// BU_CDP_WS straight at the same Chromium, at a plain relay in front of it and at the mux without the
// wrapper, interleaved in one run. The budget adds up the two hops the agent's call takes: the shim's start
// (the fake CLI without a call, through the wrapper vs directly) and 1.25× what the relay's extra hop adds to
// the same connect-and-call.
func benchCall(ctx context.Context, env *benchEnv) ([]Row, error) {
	if env.chromium == "" {
		return nil, errors.New("no Chromium installed (set VIBE_CHROME)")
	}
	chr, err := benchLaunchChromium(env.chromium)
	if err != nil {
		return nil, err
	}
	defer chr.stop()
	relayURL, stopRelay, err := benchStartRelay(chr.ws)
	if err != nil {
		return nil, err
	}
	defer stopRelay()
	// A cdp store on the same Chromium: the manager's mux in front of it, its wrapper generated as for any store.
	client, stopServe, err := startServe(ctx, env, filepath.Join(env.tmp, "call-home"),
		"VIBE_PROXY_PORT_BASE=31450", "VIBE_BROWSER_IDLE_S=0", "VIBE_UI_ADDR=off")
	if err != nil {
		return nil, err
	}
	defer stopServe()
	store, err := client.CreateStore(ctx, api.StoreSpec{Name: "call", Backend: "cdp", CDPURL: chr.http})
	if err != nil {
		return nil, err
	}
	if store.Wrapper == "" {
		return nil, errors.New("the manager wrote no wrapper for the store")
	}
	wrapped := filepath.Join(store.Wrapper, wrapper.BinaryName)
	// The tab each call leaves open (it prints "2 <target id>"), closed untimed on Chromium's own endpoint.
	closer, err := benchDial(chr.ws)
	if err != nil {
		return nil, err
	}
	defer closer.close()
	closeTab := func(out []byte) error {
		f := strings.Fields(string(out))
		if len(f) != 2 || f[0] != "2" {
			return fmt.Errorf("the call printed %q; want 2 and its tab's target id", out)
		}
		_, err := closer.call("Target.closeTarget", map[string]any{"targetId": f[1]})
		return err
	}

	var base []string // the shim refuses a caller's BU_* variables
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BU_") {
			base = append(base, kv)
		}
	}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	const taskID = "c0ffee00-0000-4000-8000-000000000001"
	const task = "VIBE_TASK_ID=" + taskID
	variants := []variant{
		{"fake CLI, no call, directly", env.fakeBU, with(), nil},
		{"fake CLI, no call, through the wrapper", wrapped, with(task), nil},
		{"agent call, BU_CDP_WS at Chromium", env.fakeBU, with("FAKEBU_CALL=1", "BU_CDP_WS="+chr.ws), closeTab},
		{"agent call, BU_CDP_WS at a plain relay", env.fakeBU, with("FAKEBU_CALL=1", "BU_CDP_WS="+relayURL), closeTab},
		{"agent call through the wrapper and the mux", wrapped, with("FAKEBU_CALL=1", task), closeTab},
		// The mux's share alone: the endpoint the wrapper injects, without the wrapper.
		{"agent call, BU_CDP_WS at the mux (no wrapper)", env.fakeBU, with("FAKEBU_CALL=1", "BU_CDP_WS="+store.CDPWS+"/client-"+taskID), closeTab},
	}
	samples, err := interleave(ctx, variants, callRuns, 10, callSettle)
	if err != nil {
		return nil, err
	}
	var rows []Row
	p50, p95 := make([]time.Duration, len(variants)), make([]time.Duration, len(variants))
	for v, variant := range variants {
		var p99 time.Duration
		p50[v], p95[v], p99 = percentiles(samples[v])
		rows = append(rows, Row{Group: "call", Name: variant.name, P50: p50[v], P95: p95[v], P99: p99, OK: true})
	}
	shimAdded, relayAdded := p50[1]-p50[0], p50[3]-p50[2]
	added, added95 := p50[4]-p50[2], p95[4]-p95[2]
	budget := shimAdded + relayAdded*5/4
	return append(rows,
		Row{Group: "call", Name: "shim adds (p50)", Value: ms(shimAdded), Unit: "ms", OK: true},
		Row{Group: "call", Name: "plain relay adds to the call (p50)", Value: ms(relayAdded), Unit: "ms", OK: true},
		Row{Group: "call", Name: "the mux alone adds to the call (p50)", Value: ms(p50[5] - p50[2]), Unit: "ms", OK: true},
		Row{Group: "call", Name: "wrapper + mux add to the call (p95)", Value: ms(added95), Unit: "ms", OK: true},
		Row{Group: "call", Name: "wrapper + mux add to the call (p50)", Value: ms(added), Unit: "ms",
			Budget: fmt.Sprintf("≤ shim + 1.25× relay = %.3g ms", ms(budget)), OK: added <= budget},
	), nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
