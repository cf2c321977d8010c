package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	home := filepath.Join(env.tmp, "call-home")
	client, stopServe, err := startServe(ctx, env, home,
		"VIBE_PROXY_PORT_BASE=31450", "VIBE_BROWSER_IDLE_S=0", "VIBE_UI_ADDR=off")
	if err != nil {
		return nil, err
	}
	defer stopServe()
	store, err := client.CreateStore(ctx, api.StoreSpec{Name: "call", Backend: "cdp", StoreSettings: api.StoreSettings{CDPURL: chr.http}})
	if err != nil {
		return nil, err
	}
	if store.Wrapper == "" {
		return nil, errors.New("the manager wrote no wrapper for the store")
	}
	wrapped := filepath.Join(store.Wrapper, wrapper.BinaryName)
	// The same store with its timeline off (SPEC §15: the full timeline's cost is this pair's ratio).
	off := api.TimelineOff
	quiet, err := client.CreateStore(ctx, api.StoreSpec{Name: "call quiet", Backend: "cdp", StoreSettings: api.StoreSettings{CDPURL: chr.http, Timeline: off}})
	if err != nil {
		return nil, err
	}
	quietWrapped := filepath.Join(quiet.Wrapper, wrapper.BinaryName)
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
	const quietTask = "VIBE_TASK_ID=c0ffee00-0000-4000-8000-000000000002"
	// A full timeline photographs the call's tab after the call: its tab is closed once that is done (or
	// given up on), untimed, so that the shot is taken as it would be.
	// The timeline is followed as `task log --follow` does (each answer held until there is a new entry),
	// so that waiting costs the manager nothing the CPU rows would count.
	shots := 0     // the runs whose tab was photographed
	var seen int64 // the last entry of the task seen
	closeAfterShot := func(out []byte) error {
		f := strings.Fields(string(out))
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		for found := false; len(f) == 2 && !found; {
			tl, err := client.Timeline(wctx, taskID, seen, true)
			if err != nil {
				break
			}
			for _, e := range tl.Entries {
				seen = e.Seq
				if e.Shot != nil && e.Shot.Tab == f[1] {
					found = true
					shots++
				}
			}
		}
		return closeTab(out)
	}
	variants := []variant{
		{"fake CLI, no call, directly", env.fakeBU, with(), nil},
		{"fake CLI, no call, through the wrapper", wrapped, with(task), nil},
		{"agent call, BU_CDP_WS at Chromium", env.fakeBU, with("FAKEBU_CALL=1", "BU_CDP_WS="+chr.ws), closeTab},
		{"agent call, BU_CDP_WS at a plain relay", env.fakeBU, with("FAKEBU_CALL=1", "BU_CDP_WS="+relayURL), closeTab},
		{"agent call through the wrapper and the mux", wrapped, with("FAKEBU_CALL=1", task), closeAfterShot},
		// The mux's share alone: the endpoint the wrapper injects, without the wrapper.
		{"agent call, BU_CDP_WS at the mux (no wrapper)", env.fakeBU, with("FAKEBU_CALL=1", "BU_CDP_WS="+store.CDPWS+"/client-"+taskID), closeTab},
		{"agent call through the wrapper, timeline off", quietWrapped, with("FAKEBU_CALL=1", quietTask), closeTab},
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
	ratio := float64(p50[4]) / float64(p50[6])
	runs := shots // counted before the CPU runs add their own
	// The CPU runs wait for each call's shot on disk, not through the API: a follower's answers are the
	// manager's work too (its reads of the task and the entries, their JSON), and the off runs have none.
	shotDir := filepath.Join(home, "timeline", store.Slug, taskID)
	onDisk := countFiles(shotDir)
	closeAfterFile := func(out []byte) error {
		onDisk = waitShotFile(ctx, shotDir, onDisk)
		return closeTab(out)
	}
	cpuFull, cpuOff, err := timelineCPU(ctx, client, wrapped, quietWrapped, with("FAKEBU_CALL=1", task),
		with("FAKEBU_CALL=1", quietTask), closeAfterFile, closeTab)
	if err != nil {
		return nil, err
	}
	cpuRatio := float64(cpuFull) / float64(max(cpuOff, 1))
	return append(rows,
		Row{Group: "call", Name: "timeline full / off, whole call (p50)", Value: ratio, Unit: "×", Budget: "≤ 1.03×", OK: ratio <= 1.03},
		Row{Group: "call", Name: "timeline shots per call", Value: float64(runs) / float64(callRuns+10), Unit: "shots", OK: true},
		Row{Group: "call", Name: "manager CPU per call, timeline full", Value: ms(cpuFull), Unit: "ms", OK: true},
		Row{Group: "call", Name: "manager CPU per call, timeline off", Value: ms(cpuOff), Unit: "ms", OK: true},
		Row{Group: "call", Name: "manager CPU per call, timeline full / off", Value: cpuRatio, Unit: "×", Budget: "≤ 1.5×", OK: cpuRatio <= 1.5},
		Row{Group: "call", Name: "capture's share of the manager's CPU (full)", Value: 100 * float64(cpuFull-cpuOff) / float64(max(cpuFull, 1)), Unit: "%", OK: true},
		Row{Group: "call", Name: "shim adds (p50)", Value: ms(shimAdded), Unit: "ms", OK: true},
		Row{Group: "call", Name: "plain relay adds to the call (p50)", Value: ms(relayAdded), Unit: "ms", OK: true},
		Row{Group: "call", Name: "the mux alone adds to the call (p50)", Value: ms(p50[5] - p50[2]), Unit: "ms", OK: true},
		Row{Group: "call", Name: "wrapper + mux add to the call (p95)", Value: ms(added95), Unit: "ms", OK: true},
		Row{Group: "call", Name: "wrapper + mux add to the call (p50)", Value: ms(added), Unit: "ms",
			Budget: fmt.Sprintf("≤ shim + 1.25× relay = %.3g ms", ms(budget)), OK: added <= budget},
	), nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waitShotFile waits, for at most 2 s, until dir (a task's shots folder) holds more than had files: the call's
// shot is on disk. It reads the folder, never the manager's API. It returns the files the folder holds.
func waitShotFile(ctx context.Context, dir string, had int) int {
	deadline := time.Now().Add(2 * time.Second)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if n := countFiles(dir); n > had {
			return n
		}
		time.Sleep(2 * time.Millisecond)
	}
	return countFiles(dir)
}

// countFiles is the number of entries of dir (0 when it cannot be read).
func countFiles(dir string) int {
	es, _ := os.ReadDir(dir)
	return len(es)
}

// timelineCPU is the manager's CPU time per agent call with the timeline full and off: runs of calls of each
// in turn (cpuRounds of cpuRun calls: another process's load falls on both alike), each call's shot on disk
// before the next call.
func timelineCPU(ctx context.Context, client *api.Client, full, off string, fullEnv, offEnv []string,
	closeFull, closeOff func([]byte) error) (time.Duration, time.Duration, error) {
	st, err := client.Status(ctx)
	if err != nil {
		return 0, 0, err
	}
	// /proc counts CPU in 10 ms ticks: 40 calls a side read it to 0.25 ms a call.
	const cpuRounds, cpuRun = 4, 10
	run := func(path string, env []string, closeTab func([]byte) error) (time.Duration, error) {
		before, err := processCPU(st.PID)
		if err != nil {
			return 0, err
		}
		for range cpuRun {
			cmd := exec.CommandContext(ctx, path)
			cmd.Env = env
			out, err := cmd.Output()
			if err != nil {
				return 0, fmt.Errorf("%s: %w", path, err)
			}
			if err := closeTab(out); err != nil { // after the call's shot, where it has one
				return 0, err
			}
		}
		time.Sleep(callSettle) // the last call's work after its shot (its entry, its tab's close) is counted too
		after, err := processCPU(st.PID)
		return after - before, err
	}
	var cpuFull, cpuOff time.Duration
	for range cpuRounds {
		f, err := run(full, fullEnv, closeFull)
		if err != nil {
			return 0, 0, err
		}
		o, err := run(off, offEnv, closeOff)
		if err != nil {
			return 0, 0, err
		}
		cpuFull, cpuOff = cpuFull+f, cpuOff+o
	}
	return cpuFull / time.Duration(cpuRounds*cpuRun), cpuOff / time.Duration(cpuRounds*cpuRun), nil
}

// processCPU is a process's user and system CPU time so far (Linux /proc).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil // USER_HZ is 100 on Linux
}
