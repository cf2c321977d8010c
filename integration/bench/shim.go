package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/wrapper"
	"vibebrowser/wrapshim"
)

const shimRuns = 300

// bashWrapper is the seed's fast path rebuilt for comparison: bash validates the session, curl probes the
// proxy, perl arms the alarm and execs the real CLI.
const bashWrapper = `#!/usr/bin/env bash
set -u
SLUG=acme
if [[ -n "${VIBE_TASK_ID:-}" ]]; then
  [[ "$VIBE_TASK_ID" =~ ^[0-9A-Fa-f]{8}[A-Za-z0-9-]{0,56}$ ]] || { echo "browser-use: bad VIBE_TASK_ID" >&2; exit 2; }
  BU_NAME="$SLUG-${VIBE_TASK_ID:0:8}"; CID="$VIBE_TASK_ID"
else
  BU_NAME="$SLUG"; CID=manual
fi
for a in "$@"; do
  case "$a" in --cdp-url*|--cdp-ws*|--mcp*|--connect*|--profile*) echo "browser-use: $a is not allowed" >&2; exit 2;; esac
done
if ! curl -sf --max-time 2 "http://127.0.0.1:${PROXY_PORT}/json/version" >/dev/null; then
  echo "browser-use: browser not ready" >&2; exit 69
fi
export BU_NAME BU_CDP_WS="ws://127.0.0.1:${PROXY_PORT}/client-${CID}"
export BH_RUNTIME_DIR="$HOME_DIR/r" BH_RUNTIME_DIR_SHARED=1 BH_TMP_DIR="$HOME_DIR/bh-tmp" BH_TMP_DIR_SHARED=1
unset http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY BROWSER_USE_API_KEY
exec perl -e 'alarm shift; exec @ARGV' 120 "$REAL_BU" "$@"
`

// benchShim compares the shim's fast path with running the fake CLI directly and with the bash wrapper.
func benchShim(ctx context.Context, env *benchEnv) ([]Row, error) {
	home := filepath.Join(env.tmp, "shim-home")
	for _, d := range []string{"run", "r", "bh-tmp"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			return nil, err
		}
	}
	socket := api.SocketPath(home)
	stopMgr, err := serveEnsure(socket)
	if err != nil {
		return nil, err
	}
	defer stopMgr()
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer probe.Close()
	go http.Serve(probe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"Browser":"Chrome/156","webSocketDebuggerUrl":"ws://127.0.0.1/devtools/browser/x"}`)
	}))

	dir := filepath.Join(home, "bin", "acme")
	cfg := &api.ShimConfig{Format: api.ShimFormat, Kind: api.ShimKindStore, StoreID: "bench-store", Slug: "acme",
		ManagerSocket: socket, RealBU: env.fakeBU, RuntimeDir: filepath.Join(home, "r"),
		TmpDir: filepath.Join(home, "bh-tmp"), WorkerSlots: 3}
	if err := wrapper.Install(dir, env.shim, cfg); err != nil {
		return nil, err
	}
	bash := filepath.Join(home, "bash-wrapper")
	if err := os.WriteFile(bash, []byte(bashWrapper), 0o755); err != nil {
		return nil, err
	}
	baseEnv := append(os.Environ(), "VIBE_TASK_ID=a1b2c3d4-0000-4000-8000-000000000001",
		"PROXY_PORT="+fmt.Sprint(probe.Addr().(*net.TCPAddr).Port), "HOME_DIR="+home, "REAL_BU="+env.fakeBU)
	emptyGo, err := buildEmptyGo(env.tmp)
	if err != nil {
		return nil, err
	}
	trueBin, err := exec.LookPath("true")
	if err != nil {
		return nil, err
	}
	// The first three are compared; the last two are this machine's floors for starting any process and
	// any Go program, which the shim's added time cannot go below.
	variants := []variant{
		{"fake CLI directly", env.fakeBU, baseEnv, nil},
		{"through the shim", filepath.Join(dir, wrapper.BinaryName), baseEnv, nil},
		{"through the bash wrapper", bash, baseEnv, nil},
		{"floor: /bin/true", trueBin, baseEnv, nil},
		{"floor: an empty Go program", emptyGo, baseEnv, nil},
		// Its phases, told by the shim itself (it writes one more line, so it is kept apart from the above).
		{"through the shim, telling its phases", filepath.Join(dir, wrapper.BinaryName), baseEnv, nil},
	}
	phases := &shimPhases{}
	samples, err := interleavePhases(ctx, variants, shimRuns, 10, 0, map[int]*shimPhases{len(variants) - 1: phases})
	if err != nil {
		return nil, err
	}
	var rows []Row
	p50s := make([]time.Duration, len(variants))
	for v, variant := range variants {
		p50, p95, p99 := percentiles(samples[v])
		p50s[v] = p50
		rows = append(rows, Row{Group: "shim", Name: variant.name, P50: p50, P95: p95, P99: p99, OK: true})
	}
	shimAdded, bashAdded, goFloor := p50s[1]-p50s[0], p50s[2]-p50s[0], p50s[4]
	rows = append(rows,
		Row{Group: "shim", Name: "shim adds (p50)", Value: ms(shimAdded), Unit: "ms",
			Budget: "≤ 2 ms", OK: shimAdded <= 2*time.Millisecond},
		Row{Group: "shim", Name: "bash wrapper adds (p50)", Value: ms(bashAdded), Unit: "ms", OK: true},
		Row{Group: "shim", Name: "shim adds beyond an empty Go start (p50)", Value: ms(shimAdded - goFloor),
			Unit: "ms", Budget: "≤ 1 ms", OK: shimAdded-goFloor <= time.Millisecond},
		Row{Group: "shim", Name: "bash added / shim added", Value: float64(bashAdded) / float64(max(shimAdded, time.Microsecond)),
			Unit: "×", Budget: "≥ 18×", OK: bashAdded >= 18*shimAdded},
	)
	return append(rows, phases.rows()...), nil
}

// variant is one way of running a program, timed by interleave.
type variant struct {
	name string
	path string
	env  []string
	// after, if set, runs after each run with its output, untimed (the call group closes the run's tab).
	after func(out []byte) error
}

// interleave runs each variant once per round, warm uncounted rounds first, then runs counted ones, so that
// drift on a shared machine hits every variant alike; it returns each variant's wall times, in order. Each
// run starts settle after the one before ended (and its after), so that what a run leaves working (a
// browser tearing down the tab that was closed) is not timed as part of the next.
func interleave(ctx context.Context, variants []variant, runs, warm int, settle time.Duration) ([][]time.Duration, error) {
	return interleavePhases(ctx, variants, runs, warm, settle, nil)
}

// interleavePhases is interleave that also has the shim variants in phases (by index) tell their phases:
// each of their runs gets wrapshim.PhasesEnv set to its spawn time, and its counted runs' phases go there.
func interleavePhases(ctx context.Context, variants []variant, runs, warm int, settle time.Duration,
	phases map[int]*shimPhases) ([][]time.Duration, error) {
	samples := make([][]time.Duration, len(variants))
	for i := 0; i < runs+warm; i++ {
		for v, variant := range variants {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			time.Sleep(settle)
			cmd := exec.Command(variant.path)
			cmd.Env = variant.env
			start := time.Now()
			if phases[v] != nil {
				cmd.Env = append(slices.Clip(variant.env), wrapshim.PhasesEnv+"="+strconv.FormatInt(start.UnixNano(), 10))
			}
			out, err := cmd.CombinedOutput()
			took := time.Since(start)
			if err != nil {
				return nil, fmt.Errorf("%s: %v: %s", variant.name, err, out)
			}
			if i >= warm {
				samples[v] = append(samples[v], took)
				if phases[v] != nil {
					if err := phases[v].add(out, took); err != nil {
						return nil, fmt.Errorf("%s: %w", variant.name, err)
					}
				}
			}
			if variant.after != nil {
				if err := variant.after(out); err != nil {
					return nil, fmt.Errorf("%s: %w", variant.name, err)
				}
			}
		}
	}
	return samples, nil
}

// shimPhases collects the shim's own account of its phases (wrapshim.PhasesEnv), run by run, and "exit":
// what the caller's wall time holds after the last phase (the shim ending and being reaped).
type shimPhases struct {
	names []string // in the order the shim tells them
	took  map[string][]time.Duration
}

// add reads the phases line of one run's output, whose wall time was wall.
func (p *shimPhases) add(out []byte, wall time.Duration) error {
	for line := range strings.Lines(string(out)) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), wrapshim.PhasesPrefix)
		if !ok {
			continue
		}
		if p.took == nil {
			p.took = map[string][]time.Duration{}
		}
		var sum time.Duration
		for _, kv := range append(strings.Fields(rest), "exit=") {
			name, ns, _ := strings.Cut(kv, "=")
			d := wall - sum
			if name != "exit" {
				n, err := strconv.ParseInt(ns, 10, 64)
				if err != nil {
					return fmt.Errorf("phase %q: %w", kv, err)
				}
				d = time.Duration(n)
			}
			if _, seen := p.took[name]; !seen {
				if phaseWhat[name] == "" {
					return fmt.Errorf("the shim told a phase %q that has no row here: describe it in phaseWhat", name)
				}
				p.names = append(p.names, name)
			}
			p.took[name] = append(p.took[name], d)
			sum += d
		}
		return nil
	}
	return fmt.Errorf("no %q line in the shim's output: %s", wrapshim.PhasesPrefix, out)
}

// phaseWhat says what each of the shim's phases covers, for the table.
var phaseWhat = map[string]string{
	"start":  "spawn to Main: exec, runtime and package init",
	"config": "its config read and checked",
	"plan":   "the session rules, the CLI's stat",
	"ensure": "ensure, a round trip to the manager",
	"taps":   "the CLI's environment and the taps",
	"fork":   "the signal handler, fork and exec of the CLI",
	"child":  "the CLI runs (not the shim's)",
	"finish": "the CLI reaped, the taps' kept output",
	"wedge":  "the wedge counter (an open when there is none)",
	"report": "the call report, written to the manager (not waited for)",
	"exit":   "the shim ends and is reaped",
}

// rows are the phases' rows, and the sum of their p50s that is the shim's own (all but the CLI's run).
func (p *shimPhases) rows() []Row {
	var rows []Row
	var own time.Duration
	for _, name := range p.names {
		p50, p95, p99 := percentiles(p.took[name])
		rows = append(rows, Row{Group: "shim", Name: "shim phase: " + name + " (" + phaseWhat[name] + ")",
			P50: p50, P95: p95, P99: p99, OK: true})
		if name != "child" && name != "start" {
			own += p50
		}
	}
	return append(rows, Row{Group: "shim", Name: "shim phases after start, but the CLI's run (sum of p50s)",
		Value: ms(own), Unit: "ms", OK: true})
}

// buildEmptyGo builds a Go program that does nothing, to measure what starting any Go binary costs here.
func buildEmptyGo(tmp string) (string, error) {
	dir := filepath.Join(tmp, "empty-go")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "empty")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s", "-o", bin, src)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the empty Go program: %v\n%s", err, out)
	}
	return bin, nil
}

// serveEnsure answers the shim's ensure on a unix socket the way a manager with a running browser does.
func serveEnsure(socket string) (stop func(), err error) {
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.EnsureRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(api.EnsureResponse{CDPWS: "ws://127.0.0.1:9400/token/client-" + req.ClientID})
	})}
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}
