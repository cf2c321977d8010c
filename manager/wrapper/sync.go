package wrapper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/state"
)

// Directories of bin/ that are not stores'.
const (
	guardDir = api.GuardDir
	webDir   = api.WebKey
)

// Writer writes the daemon's wrappers: each store's and the web browser's, and the guard.
type Writer struct {
	Cfg   *config.Config
	DB    *state.DB
	Fleet *browsers.Fleet
	Log   zerolog.Logger
}

// shimConfig is the config baked beside the wrapper of sp.
func (m Writer) shimConfig(sp browsers.Spec) *api.ShimConfig {
	cfg := &api.ShimConfig{
		Format:         api.ShimFormat,
		Kind:           api.ShimKindStore,
		StoreID:        sp.Key,
		Slug:           sp.Slug,
		ManagerSocket:  m.Cfg.SocketPath(),
		AgentSocket:    api.AgentSocketPath(m.Cfg.Home),
		RealBU:         m.Cfg.BrowserUse,
		RuntimeDir:     m.Cfg.Path("r"),
		TmpDir:         m.Cfg.Path("bh-tmp"),
		WorkerSlots:    m.Cfg.WorkerSlots,
		CallTimeoutS:   int(m.Cfg.CallTimeout.Seconds()),
		EnsureTimeoutS: int(m.Cfg.StartTimeout.Seconds()) + 60,
	}
	if sp.Key == api.WebKey {
		cfg.Kind, cfg.StoreID, cfg.Slug = api.ShimKindWeb, "", ""
	}
	bc := m.Cfg.Browsers()
	if agent, err := bc.Agent(sp); err == nil && agent != nil {
		// Its agent user's own (layOutStore): no other store's agents see its daemons' sockets and files.
		cfg.RuntimeDir, cfg.TmpDir = m.Cfg.Path("r", sp.Slug), m.Cfg.Path("bh-tmp", sp.Slug)
	}
	return cfg
}

// Write installs sp's wrapper. Without a real browser-use CLI no wrapper is written: a wrapper
// forwarding to a bare name would re-resolve to itself, and the guard below it refuses cleanly instead.
func (m Writer) Write(ctx context.Context, sp browsers.Spec) error {
	if m.Cfg.BrowserUse == "" {
		return fmt.Errorf("%w: %s", apierr.ErrUnavailable, m.Cfg.BrowserUseProblem)
	}
	shim, err := m.Cfg.ShimPath()
	if err != nil {
		return fmt.Errorf("%w: the wrapshim binary: %v (set VIBE_SHIM or install wrapshim beside vibe-browser)", apierr.ErrUnavailable, err)
	}
	dir := m.Cfg.Path("bin", sp.Slug)
	if ic, err := readInstalled(dir); err == nil && ic.Format > api.ShimFormat {
		// A newer manager wrote it; downgrading would break that manager's shims after a rollback.
		return nil
	}
	return Install(dir, shim, m.shimConfig(sp))
}

// readInstalled reads the kept-or-wiped facts of the wrapper in dir.
func readInstalled(dir string) (installedConfig, error) {
	var ic installedConfig
	data, err := os.ReadFile(filepath.Join(dir, api.ShimConfigName))
	if err == nil {
		err = json.NewDecoder(bytes.NewReader(data)).Decode(&ic)
	}
	return ic, err
}

// writeGuard installs bin/_guard/browser-use, which always refuses.
func (m Writer) writeGuard() error {
	shim, err := m.Cfg.ShimPath()
	if err != nil {
		return fmt.Errorf("%w: the wrapshim binary: %v", apierr.ErrUnavailable, err)
	}
	return Install(m.Cfg.Path("bin", guardDir), shim, &api.ShimConfig{Format: api.ShimFormat, Kind: api.ShimKindGuard})
}

// installedConfig is the part of a wrapper's config read when deciding to keep it; it is read leniently
// because a newer format may carry fields this manager does not know.
type installedConfig struct {
	Format  int    `json:"format"`
	Kind    string `json:"kind"`
	StoreID string `json:"store_id"`
}

// Sync is the boot pass: wrappers of an older format or of a deleted store are removed (current and
// newer formats are kept, so a rollback never leaves a window without a wrapper), the guard is regenerated
// and every store's and the web browser's wrapper is rewritten with this manager's shim.
func (m Writer) Sync(ctx context.Context) error {
	stores, err := m.DB.ListStores(ctx)
	if err != nil {
		return err
	}
	known := map[string]state.Store{}
	for _, s := range stores {
		known[s.ID] = s
	}
	entries, err := os.ReadDir(m.Cfg.Path("bin"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == guardDir || e.Name() == webDir {
			continue
		}
		dir := m.Cfg.Path("bin", e.Name())
		ic, err := readInstalled(dir)
		_, storeKnown := known[ic.StoreID]
		switch {
		case err != nil && !errors.Is(err, os.ErrNotExist):
			m.Log.Warn().Err(err).Str("dir", dir).Msg("removing a wrapper whose config cannot be read")
		case errors.Is(err, os.ErrNotExist) || ic.Format < api.ShimFormat:
			m.Log.Info().Str("dir", dir).Int("format", ic.Format).Msg("removing an older-format wrapper")
		case ic.Kind == api.ShimKindStore && !storeKnown:
			m.Log.Info().Str("dir", dir).Str("store", ic.StoreID).Msg("removing the wrapper of a deleted store")
		default:
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := m.writeGuard(); err != nil {
		m.Log.Warn().Err(err).Msg("guard wrapper not written")
	}
	if m.Cfg.BrowserUse == "" {
		return nil
	}
	for _, s := range stores {
		sp, err := browsers.StoreSpec(s)
		if err == nil {
			err = m.Write(ctx, sp)
		}
		if err != nil {
			m.Log.Warn().Err(err).Str("store", s.ID).Msg("wrapper not written")
		}
	}
	web, err := m.Fleet.WebSpec(ctx)
	if err != nil {
		return err
	}
	if err := m.Write(ctx, web); err != nil {
		m.Log.Warn().Err(err).Msg("web wrapper not written")
	}
	return nil
}
