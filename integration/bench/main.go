// Package main is the benchmark harness behind `task bench`: it measures the SPEC §8 budgets side by side in
// one run, prints a table and writes the rows as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// Row is one measured line of the table.
type Row struct {
	Group  string        `json:"group"`
	Name   string        `json:"name"`
	P50    time.Duration `json:"p50_ns,omitempty"`
	P95    time.Duration `json:"p95_ns,omitempty"`
	P99    time.Duration `json:"p99_ns,omitempty"`
	Value  float64       `json:"value,omitempty"`
	Unit   string        `json:"unit,omitempty"`
	Budget string        `json:"budget,omitempty"`
	OK     bool          `json:"ok"`
}

// group is one family of measurements; its rows carry their own budgets.
type group struct {
	name string
	run  func(ctx context.Context, env *benchEnv) ([]Row, error)
}

// benchEnv is what every group gets: the built binaries and a scratch directory.
type benchEnv struct {
	root     string // repository root
	tmp      string
	vibe     string // built vibe-browser
	shim     string // built wrapshim
	fakeBU   string // built fake browser-use CLI
	chromium string // a Chromium binary, "" when none is installed
}

var groups = []group{
	{"shim", benchShim},
	{"manager", benchManager},
	{"mux", func(ctx context.Context, env *benchEnv) ([]Row, error) { return benchMux(ctx, env.chromium) }},
	{"pipe", benchPipe},
	{"proxy", benchProxy},
	{"call", benchCall},
	{"snapshot", benchSnapshot},
	{"logins", benchLogins},
	{"cluster", benchCluster},
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == relayProcessArg {
		relayProcessMain(os.Args[2])
		return
	}
	out := flag.String("out", "bench/results.json", "where to write the rows as JSON")
	only := flag.String("only", "", "comma-separated groups to run (default all: "+groupNames()+")")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *out, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func groupNames() string {
	var names []string
	for _, g := range groups {
		names = append(names, g.name)
	}
	return strings.Join(names, ",")
}

func run(ctx context.Context, out, only string) error {
	env, err := setup()
	if err != nil {
		return err
	}
	defer os.RemoveAll(env.tmp)
	var rows []Row
	for _, g := range groups {
		if only != "" && !slices.Contains(strings.Split(only, ","), g.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s…\n", g.name)
		r, err := g.run(ctx, env)
		if err != nil {
			return fmt.Errorf("%s: %w", g.name, err)
		}
		rows = append(rows, r...)
	}
	printTable(rows)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(data, '\n'), 0o644)
}

func setup() (*benchEnv, error) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return nil, fmt.Errorf("find module root: %w", err)
	}
	tmp, err := os.MkdirTemp("", "vibe-bench-")
	if err != nil {
		return nil, err
	}
	env := &benchEnv{root: strings.TrimSpace(string(root)), tmp: tmp,
		vibe: filepath.Join(tmp, "vibe-browser"), shim: filepath.Join(tmp, "wrapshim"), fakeBU: filepath.Join(tmp, "fakebu")}
	for bin, pkg := range map[string]string{env.vibe: "./cmd/vibe-browser", env.shim: "./cmd/wrapshim",
		env.fakeBU: "./integration/fakebu"} {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s", "-o", bin, pkg)
		cmd.Dir = env.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: %v\n%s", pkg, err, out)
		}
	}
	for _, name := range []string{os.Getenv("VIBE_CHROME"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			env.chromium = p
			break
		}
	}
	return env, nil
}

func printTable(rows []Row) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "group\tmeasure\tp50\tp95\tp99\tvalue\tbudget\tok")
	dur := func(d time.Duration) string {
		if d == 0 {
			return "-"
		}
		return d.Round(time.Microsecond).String()
	}
	for _, r := range rows {
		value := "-"
		if r.Unit != "" {
			value = fmt.Sprintf("%.4g %s", r.Value, r.Unit)
		}
		ok := "yes"
		if !r.OK {
			ok = "NO"
		}
		if r.Budget == "" {
			ok = ""
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Group, r.Name, dur(r.P50), dur(r.P95), dur(r.P99), value, r.Budget, ok)
	}
	w.Flush()
}

// percentiles sorts samples and returns p50, p95 and p99.
func percentiles(samples []time.Duration) (p50, p95, p99 time.Duration) {
	s := slices.Clone(samples)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.95), at(0.99)
}
