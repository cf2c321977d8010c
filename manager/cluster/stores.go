package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"vibebrowser/manager/seal"
)

// Every store is the cluster's (SPEC §19 "What lives where"): its record is an entry of the stores bucket,
// keyed by its id, its value the record sealed with the cluster's secret for the purpose "store:<id>", so
// nothing of a store (its token, its proxy's credentials, its Ziniao password) travels or rests in the clear,
// and one store's record never opens as another's. Each host keeps its state.db in line with the bucket.

// ErrStoreGone is Get's answer for a store the cluster does not have.
var ErrStoreGone = errors.New("the cluster has no such store")

// ErrStoreMoved is Put's refusal when the record changed since the revision given.
var ErrStoreMoved = errors.New("the store's record changed meanwhile")

// StoreRecord is a store as the cluster keeps it: what every host needs to serve it, but not its local port.
type StoreRecord struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Slug    string          `json:"slug"`
	Backend string          `json:"backend"`
	Token   string          `json:"token"`
	Config  json.RawMessage `json:"config"`

	ZiniaoCompany  string `json:"ziniao_company,omitempty"`
	ZiniaoUsername string `json:"ziniao_username,omitempty"`
	ZiniaoPassword string `json:"ziniao_password,omitempty"`
	ZiniaoBrowser  string `json:"ziniao_browser,omitempty"`

	// By is the host that wrote the record, for the events that name a clash.
	By string `json:"by,omitempty"`

	// Revision is the entry's revision in the bucket (not sealed: the bucket's own).
	Revision uint64 `json:"-"`
	// Deleted is set on a record handed to Follow's callback for a store removed from the cluster; only ID
	// and Revision are set then.
	Deleted bool `json:"-"`
}

// Stores is the cluster's stores bucket, with the secret that seals its records. Its methods are safe for
// concurrent use.
type Stores struct {
	kv  jetstream.KeyValue
	key *seal.Key
	log zerolog.Logger

	mu sync.Mutex // guards the field below
	// seen is the newest revision handed to Follow's callback, per store: a watch started again hands every
	// current entry again, and the callback gets each revision once.
	seen map[string]uint64
}

// NewStores is the stores kept in kv, sealed with key (the cluster's secret, Identity.Secret).
func NewStores(kv jetstream.KeyValue, key *seal.Key, log zerolog.Logger) *Stores {
	return &Stores{kv: kv, key: key, log: log, seen: map[string]uint64{}}
}

func storePurpose(id string) string { return "store:" + id }

// Get reads store id's record from the cluster.
func (s *Stores) Get(ctx context.Context, id string) (StoreRecord, error) {
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return StoreRecord{}, fmt.Errorf("store %s: %w", id, ErrStoreGone)
	}
	if err != nil {
		return StoreRecord{}, fmt.Errorf("read store %s from the cluster: %w", id, err)
	}
	return s.open(e)
}

// List is every store the cluster has.
func (s *Stores) List(ctx context.Context) ([]StoreRecord, error) {
	keys, err := s.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the cluster's stores: %w", err)
	}
	var ids []string
	for k := range keys.Keys() {
		ids = append(ids, k)
	}
	var out []StoreRecord
	for _, id := range ids {
		r, err := s.Get(ctx, id)
		if errors.Is(err, ErrStoreGone) { // removed meanwhile
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Put writes r by compare-and-set: rev 0 creates it (ErrStoreMoved when it exists), another rev updates
// the record at that revision (ErrStoreMoved when it moved on). It returns the new revision.
func (s *Stores) Put(ctx context.Context, r StoreRecord, rev uint64) (uint64, error) {
	if r.ID == "" {
		return 0, fmt.Errorf("put a store in the cluster: it has no id")
	}
	plain, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	sealed := s.key.Seal(plain, storePurpose(r.ID))
	var nrev uint64
	if rev == 0 {
		nrev, err = s.kv.Create(ctx, r.ID, sealed)
	} else {
		nrev, err = s.kv.Update(ctx, r.ID, sealed, rev)
	}
	if wrongRevision(err) {
		return 0, fmt.Errorf("put store %s in the cluster: %w", r.ID, ErrStoreMoved)
	}
	if err != nil {
		return 0, fmt.Errorf("put store %s in the cluster: %w", r.ID, err)
	}
	return nrev, nil
}

// Delete removes store id from the cluster; a store it does not have is no error.
func (s *Stores) Delete(ctx context.Context, id string) error {
	if err := s.kv.Delete(ctx, id); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("remove store %s from the cluster: %w", id, err)
	}
	return nil
}

// open is entry e's record.
func (s *Stores) open(e jetstream.KeyValueEntry) (StoreRecord, error) {
	plain, err := s.key.Open(e.Value(), storePurpose(e.Key()))
	if err != nil {
		return StoreRecord{}, fmt.Errorf("the cluster's record of store %s: %w", e.Key(), err)
	}
	var r StoreRecord
	if err := json.Unmarshal(plain, &r); err != nil {
		return StoreRecord{}, fmt.Errorf("the cluster's record of store %s does not parse: %w", e.Key(), err)
	}
	if r.ID != e.Key() {
		return StoreRecord{}, fmt.Errorf("the cluster's record of store %s names store %s", e.Key(), r.ID)
	}
	r.Revision = e.Revision()
	return r, nil
}

// storesQuiet is how long the stores' watch may deliver nothing before it is started again (see
// placementQuiet): each renewal hands every current entry again, and Follow hands on only what is newer.
const storesQuiet = 30 * time.Second

// Follow hands every store record of the cluster to apply, the current ones first, then each change (a
// removal as a record with Deleted set), until ctx ends. apply is called from one goroutine, once per
// revision. A record that does not open (not sealed with this cluster's secret) is logged and skipped.
func (s *Stores) Follow(ctx context.Context, apply func(StoreRecord)) {
	watchBucket(ctx, s.kv, storesQuiet, func(e jetstream.KeyValueEntry) {
		s.mu.Lock()
		old := s.seen[e.Key()]
		if e.Revision() > old {
			s.seen[e.Key()] = e.Revision()
		}
		s.mu.Unlock()
		if e.Revision() <= old {
			return
		}
		if e.Operation() != jetstream.KeyValuePut {
			apply(StoreRecord{ID: e.Key(), Revision: e.Revision(), Deleted: true})
			return
		}
		r, err := s.open(e)
		if err != nil {
			s.log.Error().Err(err).Msg("a store of the cluster is skipped")
			return
		}
		apply(r)
	}, s.log)
}
