package manager

import (
	"context"
	"net/http"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/snapshot"
)

// The snapshots of a store's profile (SPEC §18): list, take one now, restore one.

func (m *Manager) handleListSnapshots(r *http.Request) (any, error) {
	sp, err := m.snapshotSpec(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	all, err := m.fleet.Snapshots().List(sp)
	if err != nil {
		return nil, err
	}
	out := make([]api.Snapshot, 0, len(all))
	for _, in := range all {
		out = append(out, snapshotView(in))
	}
	return out, nil
}

func (m *Manager) handleTakeSnapshot(r *http.Request) (any, error) {
	sp, err := m.snapshotSpec(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	in, err := m.fleet.Snapshots().Take(r.Context(), sp)
	if err != nil {
		return nil, err
	}
	return snapshotView(in), nil
}

func (m *Manager) handleRestore(r *http.Request) (any, error) {
	var req api.RestoreRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	sp, err := m.snapshotSpec(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	res, err := m.fleet.Snapshots().Restore(r.Context(), sp, req.Snapshot)
	if err != nil {
		return nil, err
	}
	return api.Restored{Snapshot: snapshotView(res.Info), Files: res.Files, Checkpoint: res.Jar != nil,
		Profile: m.cfg.path("profiles", sp.Slug)}, nil
}

// snapshotSpec is the browser ref names: a store by name, slug or id, or the web browser ("web").
func (m *Manager) snapshotSpec(ctx context.Context, ref string) (browsers.Spec, error) {
	if ref == api.WebSlug || ref == api.WebKey {
		return m.fleet.WebSpec(ctx)
	}
	s, err := m.findStore(ctx, ref)
	if err != nil {
		return browsers.Spec{}, err
	}
	return browsers.StoreSpec(s)
}

func snapshotView(in snapshot.Info) api.Snapshot {
	return api.Snapshot{ID: in.ID, At: in.At, Kind: string(in.Kind), Size: in.Size, Path: in.Path}
}
