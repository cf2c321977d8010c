package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/wrapper"
	"vibebrowser/state"
)

// Directories of bin/ that are not stores'.
const (
	guardDir = api.GuardDir
	webDir   = api.WebKey
)

// shimConfig is the config baked beside the wrapper of sp.
func (m *Manager) shimConfig(sp browsers.Spec) *api.ShimConfig {
	cfg := &api.ShimConfig{
		Format:         api.ShimFormat,
		Kind:           api.ShimKindStore,
		StoreID:        sp.Key,
		Slug:           sp.Slug,
		ManagerSocket:  m.cfg.SocketPath(),
		AgentSocket:    api.AgentSocketPath(m.cfg.Home),
		RealBU:         m.cfg.BrowserUse,
		RuntimeDir:     m.cfg.Path("r"),
		TmpDir:         m.cfg.Path("bh-tmp"),
		WorkerSlots:    m.cfg.WorkerSlots,
		CallTimeoutS:   int(m.cfg.CallTimeout.Seconds()),
		EnsureTimeoutS: int(m.cfg.StartTimeout.Seconds()) + 60,
	}
	if sp.Key == api.WebKey {
		cfg.Kind, cfg.StoreID, cfg.Slug = api.ShimKindWeb, "", ""
	}
	bc := m.cfg.Browsers()
	if agent, err := bc.Agent(sp); err == nil && agent != nil {
		// Its agent user's own (layOutStore): no other store's agents see its daemons' sockets and files.
		cfg.RuntimeDir, cfg.TmpDir = m.cfg.Path("r", sp.Slug), m.cfg.Path("bh-tmp", sp.Slug)
	}
	return cfg
}

// writeWrapperFor installs sp's wrapper. Without a real browser-use CLI no wrapper is written: a wrapper
// forwarding to a bare name would re-resolve to itself, and the guard below it refuses cleanly instead.
func (m *Manager) writeWrapperFor(ctx context.Context, sp browsers.Spec) error {
	if m.cfg.BrowserUse == "" {
		return fmt.Errorf("%w: %s", apierr.ErrUnavailable, m.cfg.BrowserUseProblem)
	}
	shim, err := m.cfg.ShimPath()
	if err != nil {
		return fmt.Errorf("%w: the wrapshim binary: %v (set VIBE_SHIM or install wrapshim beside vibe-browser)", apierr.ErrUnavailable, err)
	}
	dir := m.cfg.Path("bin", sp.Slug)
	if ic, err := readInstalled(dir); err == nil && ic.Format > api.ShimFormat {
		// A newer manager wrote it; downgrading would break that manager's shims after a rollback.
		return nil
	}
	return wrapper.Install(dir, shim, m.shimConfig(sp))
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
func (m *Manager) writeGuard() error {
	shim, err := m.cfg.ShimPath()
	if err != nil {
		return fmt.Errorf("%w: the wrapshim binary: %v", apierr.ErrUnavailable, err)
	}
	return wrapper.Install(m.cfg.Path("bin", guardDir), shim, &api.ShimConfig{Format: api.ShimFormat, Kind: api.ShimKindGuard})
}

// installedConfig is the part of a wrapper's config read when deciding to keep it; it is read leniently
// because a newer format may carry fields this manager does not know.
type installedConfig struct {
	Format  int    `json:"format"`
	Kind    string `json:"kind"`
	StoreID string `json:"store_id"`
}

// SyncWrappers is the boot pass: wrappers of an older format or of a deleted store are removed (current and
// newer formats are kept, so a rollback never leaves a window without a wrapper), the guard is regenerated
// and every store's and the web browser's wrapper is rewritten with this manager's shim.
func (m *Manager) SyncWrappers(ctx context.Context) error {
	stores, err := m.db.ListStores(ctx)
	if err != nil {
		return err
	}
	known := map[string]state.Store{}
	for _, s := range stores {
		known[s.ID] = s
	}
	entries, err := os.ReadDir(m.cfg.Path("bin"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == guardDir || e.Name() == webDir {
			continue
		}
		dir := m.cfg.Path("bin", e.Name())
		ic, err := readInstalled(dir)
		_, storeKnown := known[ic.StoreID]
		switch {
		case err != nil && !errors.Is(err, os.ErrNotExist):
			m.log.Warn().Err(err).Str("dir", dir).Msg("removing a wrapper whose config cannot be read")
		case errors.Is(err, os.ErrNotExist) || ic.Format < api.ShimFormat:
			m.log.Info().Str("dir", dir).Int("format", ic.Format).Msg("removing an older-format wrapper")
		case ic.Kind == api.ShimKindStore && !storeKnown:
			m.log.Info().Str("dir", dir).Str("store", ic.StoreID).Msg("removing the wrapper of a deleted store")
		default:
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := m.writeGuard(); err != nil {
		m.log.Warn().Err(err).Msg("guard wrapper not written")
	}
	if m.cfg.BrowserUse == "" {
		return nil
	}
	for _, s := range stores {
		sp, err := browsers.StoreSpec(s)
		if err == nil {
			err = m.writeWrapperFor(ctx, sp)
		}
		if err != nil {
			m.log.Warn().Err(err).Str("store", s.ID).Msg("wrapper not written")
		}
	}
	web, err := m.fleet.WebSpec(ctx)
	if err != nil {
		return err
	}
	if err := m.writeWrapperFor(ctx, web); err != nil {
		m.log.Warn().Err(err).Msg("web wrapper not written")
	}
	return nil
}
