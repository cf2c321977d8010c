package manager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/cluster"
	"vibebrowser/mux/errdefs"
	"vibebrowser/mux/sys/atomicfile"
	"vibebrowser/state"
)

// The stores are the cluster's (SPEC §19 "What lives where"): a store added, changed or removed on any host
// is written to the cluster's stores bucket once this host's state took it, and every host follows the bucket
// and brings its state.db in line with it. What a host takes in from the bucket is never written back to it,
// so two hosts never echo a change between them.

// storeRecord is s as the cluster keeps it, written by host by.
func storeRecord(s state.Store, by string) cluster.StoreRecord {
	return cluster.StoreRecord{ID: s.ID, Name: s.Name, Slug: s.Slug, Backend: string(s.Backend), Token: s.Token,
		Config: s.Config, ZiniaoCompany: s.Ziniao.Company, ZiniaoUsername: s.Ziniao.Username,
		ZiniaoPassword: s.Ziniao.Password, ZiniaoBrowser: s.ZiniaoBrowser, By: by}
}

// setFromRecord sets s's fields that the cluster keeps to r's.
func setFromRecord(s *state.Store, r cluster.StoreRecord) {
	s.ID, s.Name, s.Slug, s.Backend, s.Token, s.Config = r.ID, r.Name, r.Slug, state.Backend(r.Backend), r.Token, r.Config
	s.Ziniao = state.ZiniaoAccount{Company: r.ZiniaoCompany, Username: r.ZiniaoUsername, Password: r.ZiniaoPassword}
	s.ZiniaoBrowser = r.ZiniaoBrowser
}

// sameRecord reports whether a and b hold the same store, whoever wrote them.
func sameRecord(a, b cluster.StoreRecord) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Slug == b.Slug && a.Backend == b.Backend && a.Token == b.Token &&
		bytes.Equal(a.Config, b.Config) && a.ZiniaoCompany == b.ZiniaoCompany && a.ZiniaoUsername == b.ZiniaoUsername &&
		a.ZiniaoPassword == b.ZiniaoPassword && a.ZiniaoBrowser == b.ZiniaoBrowser && a.Deleted == b.Deleted
}

// publishTries bounds publish's compare-and-set loop: another host writing the same store between our read
// and our write makes it read again.
const publishTries = 5

// publish writes s, as this host has it now, to the cluster.
func (ch *clusterHost) publish(ctx context.Context, s state.Store) error {
	rec := storeRecord(s, ch.host)
	for range publishTries {
		cur, err := ch.stores.Get(ctx, s.ID)
		var rev uint64
		switch {
		case errors.Is(err, cluster.ErrStoreGone):
		case err != nil:
			return err
		case sameRecord(cur, rec):
			return nil
		default:
			rev = cur.Revision
		}
		if _, err = ch.stores.Put(ctx, rec, rev); !errors.Is(err, cluster.ErrStoreMoved) {
			return err
		}
	}
	return fmt.Errorf("store %s: %w %d times in a row", s.ID, cluster.ErrStoreMoved, publishTries)
}

// clashError is the refusal of a store whose name or slug another store of the cluster has.
func clashError(s state.Store, other cluster.StoreRecord) error {
	what, value := "name", s.Name
	if other.Slug == s.Slug {
		what, value = "slug", s.Slug
	}
	by := ""
	if other.By != "" {
		by = ", added on host " + other.By
	}
	return fmt.Errorf("%w: store %q (slug %s, id %s): its %s %q is the cluster's store %q's (slug %s, id %s%s); "+
		"stores of a cluster need names and slugs of their own", errdefs.ErrConflict, s.Name, s.Slug, s.ID, what, value,
		other.Name, other.Slug, other.ID, by)
}

// clash is the store of the cluster, other than s, that has s's name or slug.
func clash(s state.Store, recs []cluster.StoreRecord) (cluster.StoreRecord, bool) {
	for _, r := range recs {
		if r.ID != s.ID && (r.Name == s.Name || r.Slug == s.Slug) {
			return r, true
		}
	}
	return cluster.StoreRecord{}, false
}

// added gives the cluster s, just added here: refused when its name or slug is another store's of the
// cluster, placed on host (or where the rule says, when ""), then written to the stores bucket.
func (ch *clusterHost) added(ctx context.Context, s state.Store, host string) error {
	recs, err := ch.stores.List(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", errdefs.ErrUnavailable, err)
	}
	if other, ok := clash(s, recs); ok {
		return clashError(s, other)
	}
	if _, err := ch.placement.Place(ctx, s.ID, host); err != nil {
		if errors.Is(err, cluster.ErrNoHost) {
			return fmt.Errorf("%w: place store %s: %v", errdefs.ErrUnavailable, s.Name, err)
		}
		return fmt.Errorf("%w: %v", errdefs.ErrInvalid, err)
	}
	if err := ch.publish(ctx, s); err != nil {
		if rerr := ch.placement.Remove(ctx, s.ID); rerr != nil {
			ch.log.Warn().Err(rerr).Str("store", s.ID).Msg("forget the placement of a store the cluster did not take")
		}
		return fmt.Errorf("%w: %v", errdefs.ErrUnavailable, err)
	}
	return nil
}

// storesPublished marks a home whose stores were given to the cluster at its first start in cluster mode:
// later starts do not give them again, since a store removed elsewhere meanwhile must stay removed.
const storesPublished = "stores-published"

// publishLocal gives the cluster, at this home's first start in cluster mode, every store of this
// host it lacks, placing each here when it is placed nowhere. A store whose name or slug is another store's
// of the cluster is refused with an event naming both; the mark is not set then, so the next start tries
// again once a person renamed one.
func (h hostStores) publishLocal(ctx context.Context) error {
	m, ch := h.m, h.m.cluster
	mark := filepath.Join(m.cfg.Home, cluster.HomeDir, storesPublished)
	if _, err := os.Stat(mark); err == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	local, err := m.db.ListStores(ctx)
	if err != nil {
		return err
	}
	recs, err := ch.stores.List(ctx)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, r := range recs {
		have[r.ID] = true
	}
	clashed := false
	for _, s := range local {
		if have[s.ID] {
			continue
		}
		if other, ok := clash(s, recs); ok {
			clashed = true
			m.note(zerolog.ErrorLevel, api.EventStoreClash, s.ID, api.Event{Message: clashError(s, other).Error() +
				": this host's store is not given to the cluster (rename one, then restart this manager)"})
			continue
		}
		if err := ch.publish(ctx, s); err != nil {
			return err
		}
		if _, err := ch.placement.Place(ctx, s.ID, ch.host); err != nil {
			var placed *cluster.PlacedError
			if !errors.As(err, &placed) {
				return err
			}
		}
		ch.log.Info().Str("store", s.ID).Str("name", s.Name).Msg("this host's store given to the cluster")
	}
	if clashed {
		return nil
	}
	return atomicfile.Write(mark, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600)
}

// follow brings this host's stores in line with the cluster's until ctx ends.
func (h hostStores) follow(ctx context.Context) {
	h.m.cluster.stores.Follow(ctx, func(r cluster.StoreRecord) { h.apply(ctx, r) })
}

// apply brings this host's copy of store r.ID in line with r: created (with its id, slug and token; a
// port, an endpoint and a wrapper of its own here), updated, or removed. Nothing it does is written back to
// the cluster.
func (h hostStores) apply(ctx context.Context, r cluster.StoreRecord) {
	m := h.m
	log := m.log.With().Str("store", r.ID).Str("from", "cluster").Logger()
	cur, err := m.db.GetStore(ctx, r.ID)
	found := err == nil
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		log.Error().Err(err).Msg("a store of the cluster is not taken in")
		return
	}
	switch {
	case r.Deleted && !found:
	case r.Deleted:
		if err := h.remove(ctx, cur); err != nil {
			log.Error().Err(err).Msg("a store removed from the cluster is not removed here")
			return
		}
		log.Info().Str("name", cur.Name).Msg("store removed (removed on another host)")
	case !found:
		var s state.Store
		setFromRecord(&s, r)
		s, err := h.add(ctx, s)
		if err != nil {
			h.refused(r, err)
			return
		}
		log.Info().Str("name", s.Name).Str("slug", s.Slug).Int("port", s.ProxyPort).Msg("store added (added on another host)")
	case sameRecord(storeRecord(cur, ""), r):
	default:
		s, err := m.db.UpdateStore(ctx, r.ID, func(s *state.Store) error {
			setFromRecord(s, r)
			return nil
		})
		if err != nil {
			h.refused(r, err)
			return
		}
		m.usersChanged(ctx, s)
		log.Info().Str("name", s.Name).Msg("store changed (changed on another host)")
	}
}

// refused tells why store r of the cluster was not taken in here: a clash of names or slugs is an event
// naming both stores, anything else a log line.
func (h hostStores) refused(r cluster.StoreRecord, err error) {
	m := h.m
	var conflict *state.ConflictError
	if errors.As(err, &conflict) && conflict.Owner != "" {
		by := ""
		if r.By != "" {
			by = " (added on host " + r.By + ")"
		}
		m.note(zerolog.ErrorLevel, api.EventStoreClash, r.ID, api.Event{Message: fmt.Sprintf(
			"the cluster's store %q (slug %s, id %s)%s is not taken in on this host: its %s %q is this host's store %q (id %s); "+
				"rename one of them", r.Name, r.Slug, r.ID, by, conflict.What, conflict.Value, conflict.OwnerName, conflict.Owner)})
		return
	}
	m.log.Error().Err(err).Str("store", r.ID).Msg("a store of the cluster is not taken in")
}
