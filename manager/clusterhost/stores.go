package clusterhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"vibebrowser/manager/cluster"
	"vibebrowser/mux/errdefs"
	"vibebrowser/mux/sys/atomicfile"
	"vibebrowser/state"
)

// The stores are the cluster's (SPEC §19 "What lives where"): a store added, changed or removed on any host
// is written to the cluster's stores bucket once this host's state took it, and every host follows the bucket
// and brings its state.db in line with it. What a host takes in from the bucket is never written back to it,
// so two hosts never echo a change between them.

// StoreRecord is s as the cluster keeps it, written by host by.
func StoreRecord(s state.Store, by string) cluster.StoreRecord {
	return cluster.StoreRecord{ID: s.ID, Name: s.Name, Slug: s.Slug, Backend: string(s.Backend), Token: s.Token,
		Config: s.Config, ZiniaoCompany: s.Ziniao.Company, ZiniaoUsername: s.Ziniao.Username,
		ZiniaoPassword: s.Ziniao.Password, ZiniaoBrowser: s.ZiniaoBrowser, By: by}
}

// SetFromRecord sets s's fields that the cluster keeps to r's.
func SetFromRecord(s *state.Store, r cluster.StoreRecord) {
	s.ID, s.Name, s.Slug, s.Backend, s.Token, s.Config = r.ID, r.Name, r.Slug, state.Backend(r.Backend), r.Token, r.Config
	s.Ziniao = state.ZiniaoAccount{Company: r.ZiniaoCompany, Username: r.ZiniaoUsername, Password: r.ZiniaoPassword}
	s.ZiniaoBrowser = r.ZiniaoBrowser
}

// SameRecord reports whether a and b hold the same store, whoever wrote them.
func SameRecord(a, b cluster.StoreRecord) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Slug == b.Slug && a.Backend == b.Backend && a.Token == b.Token &&
		bytes.Equal(a.Config, b.Config) && a.ZiniaoCompany == b.ZiniaoCompany && a.ZiniaoUsername == b.ZiniaoUsername &&
		a.ZiniaoPassword == b.ZiniaoPassword && a.ZiniaoBrowser == b.ZiniaoBrowser && a.Deleted == b.Deleted
}

// publishTries bounds publish's compare-and-set loop: another host writing the same store between our read
// and our write makes it read again.
const publishTries = 5

// Publish writes s, as this host has it now, to the cluster.
func (ch *Host) Publish(ctx context.Context, s state.Store) error {
	rec := StoreRecord(s, ch.host)
	for range publishTries {
		cur, err := ch.stores.Get(ctx, s.ID)
		var rev uint64
		switch {
		case errors.Is(err, cluster.ErrStoreGone):
		case err != nil:
			return err
		case SameRecord(cur, rec):
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

// ClashError is the refusal of a store whose name or slug another store of the cluster has.
func ClashError(s state.Store, other cluster.StoreRecord) error {
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

// Clash is the store of the cluster, other than s, that has s's name or slug.
func Clash(s state.Store, recs []cluster.StoreRecord) (cluster.StoreRecord, bool) {
	for _, r := range recs {
		if r.ID != s.ID && (r.Name == s.Name || r.Slug == s.Slug) {
			return r, true
		}
	}
	return cluster.StoreRecord{}, false
}

// Added gives the cluster s, just added here: refused when its name or slug is another store's of the
// cluster, placed on host (or where the rule says, when ""), then written to the stores bucket.
func (ch *Host) Added(ctx context.Context, s state.Store, host string) error {
	recs, err := ch.stores.List(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", errdefs.ErrUnavailable, err)
	}
	if other, ok := Clash(s, recs); ok {
		return ClashError(s, other)
	}
	if _, err := ch.placement.Place(ctx, s.ID, host); err != nil {
		if errors.Is(err, cluster.ErrNoHost) {
			return fmt.Errorf("%w: place store %s: %v", errdefs.ErrUnavailable, s.Name, err)
		}
		return fmt.Errorf("%w: %v", errdefs.ErrInvalid, err)
	}
	if err := ch.Publish(ctx, s); err != nil {
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

// PublishLocal gives the cluster, at this home's first start in cluster mode, every store of this
// host it lacks, placing each here when it is placed nowhere. A store whose name or slug is another store's
// of the cluster is handed to clashed, with an error naming both; the mark is not set then, so the next start tries
// again once a person renamed one.
func (ch *Host) PublishLocal(ctx context.Context, home string, local []state.Store, clashed func(s state.Store, err error)) error {
	mark := filepath.Join(home, cluster.HomeDir, storesPublished)
	if _, err := os.Stat(mark); err == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	recs, err := ch.stores.List(ctx)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, r := range recs {
		have[r.ID] = true
	}
	anyClash := false
	for _, s := range local {
		if have[s.ID] {
			continue
		}
		if other, ok := Clash(s, recs); ok {
			anyClash = true
			clashed(s, ClashError(s, other))
			continue
		}
		if err := ch.Publish(ctx, s); err != nil {
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
	if anyClash {
		return nil
	}
	return atomicfile.Write(mark, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600)
}
