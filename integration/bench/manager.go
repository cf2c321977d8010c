package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"vibebrowser/manager/api"
)

const ensureRuns = 2000

// ensureWarmUp is how long ensure is called, uncounted, after the browser started.
const ensureWarmUp = 3 * time.Second

// benchManager measures ensure on a running browser over the unix socket, and a Chromium cold start through
// the manager beside a direct launch of the same binary.
func benchManager(ctx context.Context, env *benchEnv) ([]Row, error) {
	if env.chromium == "" {
		return nil, errors.New("no Chromium installed (set VIBE_CHROME)")
	}
	client, stop, err := startServe(ctx, env, filepath.Join(env.tmp, "manager-home"),
		"VIBE_PROXY_PORT_BASE=31400", "VIBE_BROWSER_IDLE_S=0")
	if err != nil {
		return nil, err
	}
	defer stop()
	store, err := client.CreateStore(ctx, api.StoreSpec{Name: "bench"})
	if err != nil {
		return nil, err
	}
	req := api.EnsureRequest{Kind: api.KindStore, StoreID: store.ID, ClientID: "a1b2c3d4-bench",
		BUName: "bench-a1b2c3d4", TaskID: "a1b2c3d4-bench"}
	began := time.Now()
	if _, err := client.EnsureSession(ctx, req); err != nil {
		return nil, err
	}
	coldViaManager := time.Since(began)
	if _, err := client.StoreBrowser(ctx, "bench", api.ActionStop); err != nil {
		return nil, err
	}
	began = time.Now()
	if _, err := client.EnsureSession(ctx, req); err != nil {
		return nil, err
	}
	warmProfileViaManager := time.Since(began)

	// A Chromium that just started keeps both cores busy for a few seconds (measured: the tail of the
	// first 2000 calls after a start is 5-10x that of the next 2000, for /v1/health as much as for ensure).
	// Calls during that warm-up are made but not counted: the row is the steady state of a running browser.
	for warm := time.Now().Add(ensureWarmUp); time.Now().Before(warm); {
		if _, err := client.EnsureSession(ctx, req); err != nil {
			return nil, err
		}
	}
	p50, p95, p99, err := sampleEnsure(ctx, client, req)
	if err != nil {
		return nil, err
	}
	// The agents' door (SPEC §14): the same call on run/agent.sock with the task's token, and every check
	// that socket makes (the token, the peer's uid against the store's agent user, the store, task and client).
	tok, err := client.MintTaskToken(ctx, req.TaskID, store.ID)
	if err != nil {
		return nil, err
	}
	agent := &api.Client{Socket: api.AgentSocketPath(filepath.Join(env.tmp, "manager-home")), Token: tok.Token}
	a50, a95, a99, err := sampleEnsure(ctx, agent, req)
	if err != nil {
		return nil, err
	}
	direct, err := directLaunch(ctx, env.chromium)
	if err != nil {
		return nil, err
	}
	return []Row{
		{Group: "manager", Name: "ensure, browser running (unix socket)", P50: p50, P95: p95, P99: p99,
			Budget: "p50 ≤ 1 ms", OK: p50 <= time.Millisecond},
		{Group: "manager", Name: "ensure, browser running (agent.sock, task token)", P50: a50, P95: a95, P99: a99,
			Budget: "p50 ≤ 1 ms", OK: a50 <= time.Millisecond},
		{Group: "manager", Name: "cold start to ready via manager (new profile)", P50: coldViaManager, OK: true},
		{Group: "manager", Name: "restart to ready via manager (used profile)", P50: warmProfileViaManager, OK: true},
		{Group: "manager", Name: "direct launch to /json/version (same binary)", P50: direct, OK: true},
	}, nil
}

// sampleEnsure times ensureRuns ensure calls on client.
func sampleEnsure(ctx context.Context, client *api.Client, req api.EnsureRequest) (p50, p95, p99 time.Duration, err error) {
	samples := make([]time.Duration, 0, ensureRuns)
	for range ensureRuns {
		t0 := time.Now()
		if _, err := client.EnsureSession(ctx, req); err != nil {
			return 0, 0, 0, err
		}
		samples = append(samples, time.Since(t0))
	}
	p50, p95, p99 = percentiles(samples)
	return p50, p95, p99, nil
}

// startServe runs `vibe-browser serve` on home with the fake CLI as the real one, the built shim, Chromium
// headless and extra environment, and returns its client once it answers, and how to stop it.
func startServe(ctx context.Context, env *benchEnv, home string, extra ...string) (*api.Client, func(), error) {
	cmd := exec.Command(env.vibe, "serve")
	cmd.Env = append(append(os.Environ(), "VIBE_HOME="+home, "VIBE_BROWSER_USE="+env.fakeBU, "VIBE_SHIM="+env.shim,
		"VIBE_CHROME="+env.chromium, "VIBE_HEADLESS=1"), extra...)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	client := api.NewClient(filepath.Join(home, api.SocketRel))
	if err := waitUntil(ctx, 20*time.Second, func() bool { _, err := client.Health(ctx); return err == nil }); err != nil {
		stop()
		return nil, nil, fmt.Errorf("manager did not answer: %w", err)
	}
	return client, stop, nil
}

// directLaunch starts the same Chromium binary itself (benchLaunchChromium, the mux rows' launcher) and returns
// the time until /json/version answers, the readiness the manager waits for too.
func directLaunch(ctx context.Context, bin string) (time.Duration, error) {
	began := time.Now()
	chr, err := benchLaunchChromium(bin)
	if err != nil {
		return 0, err
	}
	defer chr.stop()
	err = waitUntil(ctx, 60*time.Second, func() bool {
		resp, err := http.Get(chr.http + "/json/version")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return time.Since(began), err
}

func waitUntil(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
