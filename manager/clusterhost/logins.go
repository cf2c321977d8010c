package clusterhost

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"vibebrowser/manager/cluster"
	"vibebrowser/mux/errdefs"
)

// Logins is the fleet's LoginCopies in a cluster (SPEC §19): the cluster's copies of every store's login,
// once the manager has joined the cluster. The fleet is made first; until the join, and after a failed one,
// each call says the cluster is not there, and the fleet goes on with what this host holds.
type Logins struct {
	l atomic.Pointer[cluster.Logins]
}

var errNoCluster = fmt.Errorf("%w: not joined to the cluster yet", errdefs.ErrUnavailable)

func (c *Logins) PutJar(ctx context.Context, storeID string, sealed []byte, at time.Time) error {
	if l := c.l.Load(); l != nil {
		return l.PutJar(ctx, storeID, sealed, at)
	}
	return errNoCluster
}

func (c *Logins) PutSnapshot(ctx context.Context, storeID, id string, r io.Reader, at time.Time) error {
	if l := c.l.Load(); l != nil {
		return l.PutSnapshot(ctx, storeID, id, r, at)
	}
	return errNoCluster
}

func (c *Logins) Jar(ctx context.Context, storeID string) ([]byte, time.Time, error) {
	if l := c.l.Load(); l != nil {
		return l.Jar(ctx, storeID)
	}
	return nil, time.Time{}, errNoCluster
}

func (c *Logins) NewestSnapshot(ctx context.Context, storeID string) (string, time.Time, io.ReadCloser, error) {
	if l := c.l.Load(); l != nil {
		return l.NewestSnapshot(ctx, storeID)
	}
	return "", time.Time{}, nil, errNoCluster
}
