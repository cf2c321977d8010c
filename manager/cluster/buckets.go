package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// The cluster's shared state lives in four JetStream key-value buckets, each a Raft-replicated stream:
// the hosts' heartbeats, the stores' placement (which host a store belongs to), the stores' leases
// (which host may run its browser now) and the stores themselves (sealed, stores.go). Keys are store ids and host names, both already in KV's key form.
const (
	BucketHosts     = "vibe-hosts"
	BucketPlacement = "vibe-placement"
	BucketLeases    = "vibe-leases"
	BucketStores    = "vibe-stores"
)

// maxReplicas is how many copies of each bucket the cluster keeps: three survive one host's loss.
const maxReplicas = 3

// Buckets are the cluster's shared state, opened (and made, the first time) on one JetStream.
type Buckets struct {
	Hosts, Placement, Leases, Stores jetstream.KeyValue
}

// OpenBuckets opens the cluster's buckets, making any that is missing with as many replicas as the
// cluster has nodes, up to three (a one-node cluster keeps one copy).
func OpenBuckets(ctx context.Context, js jetstream.JetStream, nodes int) (*Buckets, error) {
	replicas := min(max(nodes, 1), maxReplicas)
	var b Buckets
	for _, o := range []struct {
		name string
		kv   *jetstream.KeyValue
	}{{BucketHosts, &b.Hosts}, {BucketPlacement, &b.Placement}, {BucketLeases, &b.Leases}, {BucketStores, &b.Stores}} {
		kv, err := js.KeyValue(ctx, o.name)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: o.name, History: 1,
				Replicas: replicas, Storage: jetstream.FileStorage})
			if errors.Is(err, jetstream.ErrBucketExists) { // another host made it meanwhile
				kv, err = js.KeyValue(ctx, o.name)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("open the cluster's %s bucket: %w", o.name, err)
		}
		*o.kv = kv
	}
	return &b, nil
}

// wrongRevision reports whether err is a compare-and-set that lost: the key moved past the revision given
// (or exists, for a create). A replicated bucket says so with another code than a single copy does.
func wrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) ||
		errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
