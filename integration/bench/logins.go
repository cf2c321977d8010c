package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"vibebrowser/manager/logins"
	"vibebrowser/manager/seal"
	"vibebrowser/mux"
)

// SPEC §18's budget: a login checkpoint costs the agents nothing measurable. Against one Chromium whose jar
// holds jarCookies cookies, through the mux: one checkpoint's wall time and size, the restore of the whole
// jar, and the 16-client eval cell with checkpoints (at the manager's pace, and the dearest: a changed jar
// written every checkpointEvery) against none, in alternating rounds.
const (
	jarCookies        = 1000
	checkpointEvery   = 2 * time.Second // VIBE_LOGIN_CHECKPOINT_S's default
	checkpointSamples = 30
	loginRounds       = 3
	loginRound        = 6 * time.Second
)

func benchLogins(ctx context.Context, env *benchEnv) ([]Row, error) {
	if env.chromium == "" {
		return []Row{{Group: "logins", Name: "skipped: no Chromium installed"}}, nil
	}
	chr, err := benchLaunchChromium(env.chromium)
	if err != nil {
		return nil, err
	}
	defer chr.stop()
	m, muxURL, stopMux, err := benchStartMux(chr.http)
	if err != nil {
		return nil, err
	}
	defer stopMux()
	if err := fillJar(ctx, m, jarCookies); err != nil {
		return nil, err
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	key, err := seal.NewKey(raw)
	if err != nil {
		return nil, err
	}
	home := filepath.Join(env.tmp, "logins-home")
	// checkpoint is the manager's checkpoint (browsers.loginKeeper): the whole jar read through the mux, then
	// written by cp unless it is the jar cp last wrote.
	checkpoint := func(cp *logins.Checkpointer) (time.Duration, int, error) {
		t0 := time.Now()
		raw, err := m.Operator().Cookies(ctx)
		if err != nil {
			return 0, 0, err
		}
		n, err := cp.Take(raw, time.Now())
		return time.Since(t0), n, err
	}
	newCheckpointer := func() *logins.Checkpointer {
		return &logins.Checkpointer{Key: key, Home: home, Slug: "bench"}
	}

	var rows []Row
	var samples, unchanged []time.Duration
	same := newCheckpointer()
	for range checkpointSamples {
		d, n, err := checkpoint(newCheckpointer()) // a checkpointer that wrote nothing yet: the jar is written
		if err != nil || n == 0 {
			return nil, fmt.Errorf("a checkpoint of a changed jar wrote %d bytes: %v", n, err)
		}
		samples = append(samples, d)
		if _, _, err := checkpoint(same); err != nil {
			return nil, err
		}
		d, n, err = checkpoint(same) // the same jar again: read and hashed, not written
		if err != nil || n != 0 {
			return nil, fmt.Errorf("a checkpoint of an unchanged jar wrote %d bytes: %v", n, err)
		}
		unchanged = append(unchanged, d)
	}
	p50, p95, p99 := percentiles(samples)
	rows = append(rows, Row{Group: "logins", Name: fmt.Sprintf("one checkpoint, %d cookies, jar changed (read, seal, write, fsync)", jarCookies),
		P50: p50, P95: p95, P99: p99, OK: true})
	p50, p95, p99 = percentiles(unchanged)
	rows = append(rows, Row{Group: "logins", Name: fmt.Sprintf("one checkpoint, %d cookies, jar unchanged (read, hash)", jarCookies),
		P50: p50, P95: p95, P99: p99, OK: true})
	fi, err := os.Stat(logins.JarPath(home, "bench"))
	if err != nil {
		return nil, err
	}
	rows = append(rows, Row{Group: "logins", Name: fmt.Sprintf("checkpoint size, %d cookies", jarCookies), Value: float64(fi.Size()) / 1024, Unit: "KiB", OK: true})

	content, _, err := logins.ReadJar(key, home, "bench")
	if err != nil {
		return nil, err
	}
	jar, err := logins.Decode(content)
	if err != nil {
		return nil, err
	}
	samples = samples[:0]
	for range 10 {
		t0 := time.Now()
		if err := m.Operator().SetCookies(ctx, logins.Params(jar.Cookies)); err != nil {
			return nil, err
		}
		samples = append(samples, time.Since(t0))
	}
	p50, p95, p99 = percentiles(samples)
	rows = append(rows, Row{Group: "logins", Name: fmt.Sprintf("restore of the whole jar, %d cookies (setCookies)", jarCookies),
		P50: p50, P95: p95, P99: p99, OK: true})

	r, err := benchCheckpointLoad(ctx, m, benchModes{names: []string{"mux"}, urls: map[string]string{"mux": muxURL}},
		checkpoint, newCheckpointer)
	if err != nil {
		return nil, err
	}
	return append(rows, r...), nil
}

// fillJar sets n cookies of a marketplace's kind: over ten sites, a tenth HttpOnly, persistent, with
// 32-byte values.
func fillJar(ctx context.Context, m *mux.Mux, n int) error {
	type param struct {
		Name     string  `json:"name"`
		Value    string  `json:"value"`
		URL      string  `json:"url"`
		HTTPOnly bool    `json:"httpOnly"`
		Expires  float64 `json:"expires"`
	}
	ps := make([]param, n)
	v := make([]byte, 16)
	for i := range ps {
		rand.Read(v)
		ps[i] = param{Name: fmt.Sprintf("c%04d", i), Value: hex.EncodeToString(v), URL: fmt.Sprintf("https://shop%d.example/", i%10),
			HTTPOnly: i%10 == 0, Expires: float64(time.Now().Add(365 * 24 * time.Hour).Unix())}
	}
	b, _ := json.Marshal(ps)
	return m.Operator().SetCookies(ctx, b)
}

// The conditions of the eval cell: no checkpoints; the manager's (logins.Pace: eval calls are scripts, read
// every ScriptEvery intervals); and the dearest, a changed jar read and written every interval (what a
// navigation or a login answer every 2 s would cost).
const (
	loadOff = iota
	loadPace
	loadEvery
)

var loadNames = []string{"checkpoints off", "checkpoints at the manager's pace", "a changed jar written every 2s"}

// benchCheckpointLoad is the eval cell with 16 clients through the mux, in rounds that take turns through the
// conditions, compared in total (see benchViewer for why rounds).
func benchCheckpointLoad(ctx context.Context, m *mux.Mux, modes benchModes,
	checkpoint func(*logins.Checkpointer) (time.Duration, int, error), newCheckpointer func() *logins.Checkpointer) ([]Row, error) {
	clients := make([]*benchClient, 16)
	for i := range clients {
		c, err := benchDial(modes.url("mux", 400+i))
		if err != nil {
			return nil, err
		}
		defer c.close()
		if err := c.prepare(); err != nil {
			return nil, err
		}
		for range 20 { // warm-up
			if err := c.do("eval"); err != nil {
				return nil, err
			}
		}
		clients[i] = c
	}
	samples := map[int][]time.Duration{}
	elapsed := map[int]time.Duration{}
	reads := map[int]int{}
	var pace logins.Pace
	paced := newCheckpointer()
	// tick is one tick of a condition's checkpointer.
	tick := func(cond int) error {
		switch cond {
		case loadPace:
			changes, scripts := m.Taps().JarChanges(), m.Taps().JarScripts()
			if !pace.Due(time.Now(), checkpointEvery, changes, scripts) {
				return nil
			}
			_, n, err := checkpoint(paced)
			pace.Read(time.Now(), changes, scripts, n > 0)
			reads[cond]++
			return err
		case loadEvery:
			_, _, err := checkpoint(newCheckpointer())
			reads[cond]++
			return err
		}
		return nil
	}
	for r := range loginRounds {
		for i := range len(loadNames) {
			cond := (r + i) % len(loadNames)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var cpErr error
			wg.Go(func() {
				t := time.NewTicker(checkpointEvery)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
					}
					if cpErr = tick(cond); cpErr != nil {
						return
					}
				}
			})
			s, e, err := benchLoad(ctx, clients, "eval", 0, time.Now().Add(loginRound))
			close(stop)
			wg.Wait()
			if err = errors.Join(err, cpErr); err != nil {
				return nil, fmt.Errorf("round %d (%s): %w", r, loadNames[cond], err)
			}
			samples[cond] = append(samples[cond], s...)
			elapsed[cond] += e
		}
	}
	var rows []Row
	tput := map[int]float64{}
	for cond, name := range loadNames {
		p50, p95, p99 := percentiles(samples[cond])
		tput[cond] = float64(len(samples[cond])) / elapsed[cond].Seconds()
		rows = append(rows, Row{Group: "logins", Name: fmt.Sprintf("eval 16c mux, %s (%d reads in %v)", name, reads[cond], loginRounds*loginRound),
			P50: p50, P95: p95, P99: p99, Value: tput[cond], Unit: "calls/s", OK: true})
	}
	pr, er := tput[loadPace]/tput[loadOff], tput[loadEvery]/tput[loadOff]
	return append(rows,
		Row{Group: "logins", Name: "eval 16c throughput, checkpoints at the manager's pace/off", Value: pr, Unit: "x off", Budget: ">= 0.97x off", OK: pr >= 0.97},
		Row{Group: "logins", Name: fmt.Sprintf("eval 16c throughput, a changed jar of %d cookies written every 2s/off", jarCookies), Value: er, Unit: "x off"}), nil
}
