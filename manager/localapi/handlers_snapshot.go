package localapi

import (
	"context"
	"net/http"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/snapshot"
)

// The snapshots of a store's profile (SPEC §18): list, take one now, restore one.

func (h *Handler) listSnapshots(r *http.Request, _ Caller) (any, error) {
	sp, err := h.snapshotSpec(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	all, err := h.Fleet.Snapshots().List(sp)
	if err != nil {
		return nil, err
	}
	out := make([]api.Snapshot, 0, len(all))
	for _, in := range all {
		out = append(out, snapshotView(in))
	}
	return out, nil
}

func (h *Handler) takeSnapshot(r *http.Request, _ Caller) (any, error) {
	sp, err := h.snapshotSpec(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	in, err := h.Fleet.Snapshots().Take(r.Context(), sp)
	if err != nil {
		return nil, err
	}
	return snapshotView(in), nil
}

func (h *Handler) restore(r *http.Request, _ Caller) (any, error) {
	var req api.RestoreRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	sp, err := h.snapshotSpec(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	res, err := h.Fleet.Snapshots().Restore(r.Context(), sp, req.Snapshot)
	if err != nil {
		return nil, err
	}
	return api.Restored{Snapshot: snapshotView(res.Info), Files: res.Files, Checkpoint: res.Jar != nil,
		Profile: h.Cfg.Path("profiles", sp.Slug)}, nil
}

// snapshotSpec is the browser ref names: a store by name, slug or id, or the web browser ("web").
func (h *Handler) snapshotSpec(ctx context.Context, ref string) (browsers.Spec, error) {
	if ref == api.WebSlug || ref == api.WebKey {
		return h.Fleet.WebSpec(ctx)
	}
	s, err := h.Daemon.FindStore(ctx, ref)
	if err != nil {
		return browsers.Spec{}, err
	}
	return browsers.StoreSpec(s)
}

func snapshotView(in snapshot.Info) api.Snapshot {
	return api.Snapshot{ID: in.ID, At: in.At, Kind: string(in.Kind), Size: in.Size, Path: in.Path}
}
