package localapi

import (
	"context"
	"fmt"
	"net/http"

	"vibebrowser/manager/api"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// Mover moves a store to another host of the cluster (SPEC §19 "Move and failover").
type Mover interface {
	MoveStore(ctx context.Context, s state.Store, to string) (api.StoreMoved, error)
}

func (h *Handler) moveStore(r *http.Request, _ Caller) (any, error) {
	var req api.MoveRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if h.Mover == nil {
		return nil, fmt.Errorf("%w: store move moves a store to another host of a cluster, and this manager runs on a "+
			"single host (VIBE_CLUSTER or VIBE_CLUSTER_NODE makes it one of a cluster)", errdefs.ErrInvalid)
	}
	s, err := h.Daemon.FindStore(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	return h.Mover.MoveStore(r.Context(), s, req.To)
}
