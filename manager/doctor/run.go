package doctor

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/config"
	"vibebrowser/state"
)

// Options say where and against what to check.
type Options struct {
	Home    string              // absolute VIBE_HOME, as the CLI resolved it
	Getenv  func(string) string // the environment serve would read here (os.Getenv)
	Version string              // this binary's version, compared with the running manager's
	Exe     string              // this binary, compared with the one the service unit runs
}

// managerTimeout bounds the question to the manager: one that does not answer status within it is reported
// as not answering, not waited for.
const managerTimeout = 3 * time.Second

// machine is what the checks read: the configuration serve would build here, the state file, and the running
// manager's own view when one answers.
type machine struct {
	o      Options
	cfg    *config.Config
	cfgErr error // the configuration is invalid; cfg then holds the defaults with the paths serve would use

	mgr    *api.Status // nil when no manager answers
	mgrErr error

	stores   []state.Store
	registry map[string]int // the port registry, key (store id or api.WebKey) → port
	stateErr error          // state.db could not be read; nil also when there is none yet
	noState  bool           // there is no state.db yet
}

// Run runs every check, always in the same order: the checks of the machine and of the store boundary, then
// one per store's port and one per chrome store's login (SPEC §18),
// then the display and the service, then one per Ziniao store and one per store with a proxy.
func Run(ctx context.Context, o Options) []Check {
	m := gather(ctx, o)
	checks := []Check{m.config(), m.chromium(ctx), m.browserUse(ctx), m.transport(), home(m.cfg.Home, m.namesUsers(true)),
		disk(m.cfg.Home), m.socket(), m.manager(), m.state(), m.portsOfOthers()}
	checks = append(checks, m.boundary()...)
	checks = append(checks, m.uiUsers()...)
	checks = append(checks, m.ports(ctx)...)
	checks = append(checks, m.logins()...)
	checks = append(checks, m.display(), m.service())
	checks = append(checks, m.ziniao(ctx)...)
	return append(checks, m.proxies(ctx)...)
}

func gather(ctx context.Context, o Options) *machine {
	m := &machine{o: o}
	getenv := func(name string) string {
		if name == "VIBE_HOME" {
			return o.Home
		}
		return o.Getenv(name)
	}
	m.cfg, m.cfgErr = config.FromEnv(getenv)
	if m.cfgErr != nil {
		// The other checks still run, on what serve would find with the knobs at their defaults.
		keep := []string{"VIBE_HOME", "VIBE_CHROME", "VIBE_BROWSER_USE", "VIBE_SHIM"}
		cfg, err := config.FromEnv(func(name string) string {
			if strings.HasPrefix(name, "VIBE_") && !slices.Contains(keep, name) {
				return ""
			}
			return getenv(name)
		})
		if err != nil {
			cfg = &config.Config{Home: o.Home}
		}
		m.cfg = cfg
	}
	client := &api.Client{Socket: api.SocketPath(m.cfg.Home), Timeout: managerTimeout}
	if st, err := client.Status(ctx); err == nil {
		m.mgr = &st
	} else {
		m.mgrErr = err
	}
	m.readState(ctx)
	return m
}

// readState reads the stores and the port registry without changing anything (a manager may be running).
func (m *machine) readState(ctx context.Context) {
	db, err := state.OpenReadOnly(filepath.Join(m.cfg.Home, "state.db"))
	if errors.Is(err, fs.ErrNotExist) {
		m.noState = true
		return
	}
	if err != nil {
		m.stateErr = err
		return
	}
	defer db.Close()
	if m.stores, err = db.ListStores(ctx); err != nil {
		m.stateErr = err
		return
	}
	m.registry, m.stateErr = db.Ports().List(ctx)
}

// storesOf is the stores of one backend, by slug: the order each per-store check reports in.
func (m *machine) storesOf(backend state.Backend) []state.Store {
	var stores []state.Store
	for _, s := range m.stores {
		if s.Backend == backend {
			stores = append(stores, s)
		}
	}
	sort.Slice(stores, func(i, j int) bool { return stores[i].Slug < stores[j].Slug })
	return stores
}
