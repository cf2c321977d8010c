package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"vibebrowser/mux/errdefs"
)

// A store's login is the cluster's (SPEC §19): the newest checkpoint of each store's cookie jar and its
// newest snapshots (§18) are kept in a JetStream object store, replicated like the other buckets, so that a
// host launching a store whose login it lacks, or holds older, takes the cluster's. The bytes are sealed by
// the host that wrote them, with the cluster's secret; the object store only copies them.
//
// A store's objects are <store id>/jar, its newest checkpoint, and <store id>/snap/<snapshot id>, its newest
// snapshots; each one's time (when the checkpoint was written, the snapshot taken) is its metadata "at".

// BucketLogins is the object store of the stores' logins.
const BucketLogins = "vibe-logins"

// DefaultSnapshotKeep is how many snapshots of a store the cluster keeps when OpenLogins is given none
// (VIBE_SNAPSHOT_KEEP's default).
const DefaultSnapshotKeep = 5

const (
	metaAt     = "at"      // the metadata key of an object's time, RFC 3339 with nanoseconds, UTC
	maxName    = 128       // bytes of a store id or a snapshot id
	maxJar     = 64 << 20  // the most a checkpoint is read back (logins' own bound of a jar file)
	chunkSize  = 128 << 10 // the object store's own chunk size
	casTries   = 5         // compare-and-set attempts of a jar's write against other hosts' writes
	purgeBound = 5 * time.Second
)

// Logins are the stores' logins on the cluster. Its methods are safe for concurrent use, and return when
// their context ends.
type Logins struct {
	js     jetstream.JetStream
	obs    jetstream.ObjectStore
	stream jetstream.Stream // the object store's stream: its jar's compare-and-set, and purges
	keep   int
}

// OpenLogins opens the cluster's logins bucket, making it when it is missing with as many replicas as the
// cluster has nodes, up to three (another host may be making it at the same time); keep is how many
// snapshots of each store it keeps (DefaultSnapshotKeep when 0).
func OpenLogins(ctx context.Context, js jetstream.JetStream, nodes, keep int) (*Logins, error) {
	obs, err := js.ObjectStore(ctx, BucketLogins)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: BucketLogins,
			Description: "every store's newest login checkpoint and snapshots, sealed (SPEC §19)",
			Replicas:    min(max(nodes, 1), maxReplicas), Storage: jetstream.FileStorage})
		if errors.Is(err, jetstream.ErrBucketExists) { // another host made it meanwhile
			obs, err = js.ObjectStore(ctx, BucketLogins)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open the cluster's %s bucket: %w", BucketLogins, err)
	}
	stream, err := js.Stream(ctx, "OBJ_"+BucketLogins)
	if err != nil {
		return nil, fmt.Errorf("open the cluster's %s bucket: %w", BucketLogins, err)
	}
	if keep <= 0 {
		keep = DefaultSnapshotKeep
	}
	return &Logins{js: js, obs: obs, stream: stream, keep: keep}, nil
}

// checkName refuses a store id or a snapshot id that could reach outside its store's objects, naming the
// rule: ids are what state and the snapshots make (a UUID, a time and a kind), never a path.
func checkName(what, s string) error {
	var rule string
	switch {
	case s == "":
		rule = "it is empty"
	case strings.ContainsRune(s, 0):
		rule = "it holds a NUL byte"
	case len(s) > maxName:
		return errdefs.Invalid("%s %.32q… refused: it is longer than %d bytes", what, s, maxName)
	case strings.Contains(s, "/"):
		rule = `it holds "/", which separates a store's objects`
	case strings.Contains(s, ".."):
		rule = `it holds ".."`
	case s == ".":
		rule = `it is "."`
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		rule = "it holds a control character"
	}
	if rule != "" {
		return errdefs.Invalid("%s %q refused: %s", what, s, rule)
	}
	return nil
}

func jarName(storeID string) string    { return storeID + "/jar" }
func snapPrefix(storeID string) string { return storeID + "/snap/" }

// The object store's subjects (NATS ADR-20): an object's info on $O.<bucket>.M.<its name in base64url>,
// its bytes on $O.<bucket>.C.<its nuid>.
func metaSubject(name string) string {
	return "$O." + BucketLogins + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}
func chunkSubject(nuid string) string { return "$O." + BucketLogins + ".C." + nuid }

// timeOf is an object's time, from its metadata.
func timeOf(info *jetstream.ObjectInfo) (time.Time, error) {
	at, err := time.Parse(time.RFC3339Nano, info.Metadata[metaAt])
	if err != nil {
		return time.Time{}, fmt.Errorf("object %s has no time: %w", info.Name, err)
	}
	return at, nil
}

func metaOf(at time.Time) map[string]string {
	return map[string]string{metaAt: at.UTC().Format(time.RFC3339Nano)}
}

// PutJar keeps sealed, store storeID's checkpoint written at at, as its newest, unless the cluster holds one
// as new or newer: two hosts during a move never roll the jar back, whatever order their writes arrive in.
// A store Forget removed takes none again (an error of class errdefs.ErrConflict).
func (l *Logins) PutJar(ctx context.Context, storeID string, sealed []byte, at time.Time) error {
	if err := checkName("store id", storeID); err != nil {
		return err
	}
	name := jarName(storeID)
	for range casTries {
		seq, cur, err := l.last(ctx, name)
		if err != nil {
			return fmt.Errorf("put the login checkpoint of store %s: %w", storeID, err)
		}
		if cur != nil && cur.Deleted {
			return forgotten(storeID)
		}
		if cur != nil {
			if stored, err := timeOf(cur); err == nil && !at.After(stored) {
				return nil
			}
		}
		err = l.putAt(ctx, name, seq, cur, sealed, at)
		if !lostRace(err) {
			if err != nil {
				return fmt.Errorf("put the login checkpoint of store %s: %w", storeID, err)
			}
			return nil
		}
	}
	return fmt.Errorf("put the login checkpoint of store %s: other hosts wrote it %d times meanwhile", storeID, casTries)
}

// lostRace reports whether err is a publish that expected another last message on its subject: another host
// wrote first. A replicated stream answers with another code than a single one.
func lostRace(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

func forgotten(storeID string) error {
	return errdefs.Conflict("store %s was removed from the cluster (its login forgotten): nothing of it is kept again", storeID)
}

// last is name's info and the sequence of its message, nil and 0 when the bucket has none.
func (l *Logins) last(ctx context.Context, name string) (uint64, *jetstream.ObjectInfo, error) {
	m, err := l.stream.GetLastMsgForSubject(ctx, metaSubject(name))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(m.Data, &info); err != nil {
		return 0, nil, fmt.Errorf("object %s's info: %w", name, err)
	}
	return m.Sequence, &info, nil
}

// putAt writes object name as the object store's Put does (its chunks, then its info, which rolls up the
// info's subject), except that the info is published only if seq is still its subject's last message: Put
// has no compare-and-set, and a jar must never be replaced by an older one that a slower host read the
// bucket for first. The chunks of cur, the object it replaces, go; on a lost race its own go instead.
func (l *Logins) putAt(ctx context.Context, name string, seq uint64, cur *jetstream.ObjectInfo, data []byte, at time.Time) error {
	nuid := rand.Text()
	subj := chunkSubject(nuid)
	sum := sha256.New()
	chunks := 0
	for off := 0; off < len(data); off += chunkSize {
		part := data[off:min(off+chunkSize, len(data))]
		if _, err := l.js.Publish(ctx, subj, part); err != nil {
			l.purge(subj)
			return err
		}
		sum.Write(part)
		chunks++
	}
	info := jetstream.ObjectInfo{
		ObjectMeta: jetstream.ObjectMeta{Name: name, Metadata: metaOf(at),
			Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunkSize}},
		Bucket: BucketLogins, NUID: nuid, Size: uint64(len(data)), Chunks: uint32(chunks),
		Digest: jetstream.GetObjectDigestValue(sum),
	}
	if err := l.publishInfo(ctx, &info, seq); err != nil {
		l.purge(subj)
		return err
	}
	if cur != nil && cur.NUID != "" {
		l.purge(chunkSubject(cur.NUID))
	}
	return nil
}

// publishInfo publishes info as its object's info if seq is still the last message of its subject.
func (l *Logins) publishInfo(ctx context.Context, info *jetstream.ObjectInfo, seq uint64) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(metaSubject(info.Name))
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	msg.Data = b
	_, err = l.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(seq))
	return err
}

// purge drops subject's messages, bounded on its own: it cleans up after a write that failed, often because
// its context ended. What it cannot drop stays as bytes no object names.
func (l *Logins) purge(subject string) {
	ctx, cancel := context.WithTimeout(context.Background(), purgeBound)
	defer cancel()
	_ = l.stream.Purge(ctx, jetstream.WithPurgeSubject(subject))
}

// Jar is store storeID's newest checkpoint on the cluster, sealed as it was put, and when it was written;
// an error of class errdefs.ErrNotFound when the cluster holds none.
func (l *Logins) Jar(ctx context.Context, storeID string) ([]byte, time.Time, error) {
	if err := checkName("store id", storeID); err != nil {
		return nil, time.Time{}, err
	}
	res, err := l.obs.Get(ctx, jarName(storeID))
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, time.Time{}, errdefs.NotFound("the cluster holds no login checkpoint of store %s", storeID)
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("get the login checkpoint of store %s: %w", storeID, err)
	}
	defer res.Close()
	info, err := res.Info()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("get the login checkpoint of store %s: %w", storeID, err)
	}
	at, err := timeOf(info)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("get the login checkpoint of store %s: %w", storeID, err)
	}
	if info.Size > maxJar {
		return nil, time.Time{}, fmt.Errorf("get the login checkpoint of store %s: %d bytes, more than a jar holds", storeID, info.Size)
	}
	b, err := io.ReadAll(res)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("get the login checkpoint of store %s: %w", storeID, err)
	}
	return b, at, nil
}

// storedSnapshot is one of a store's snapshots in the bucket.
type storedSnapshot struct {
	name string
	at   time.Time
	nuid string
}

// snapshots are store storeID's snapshots in the bucket, newest first. The bucket is listed whole: the
// object store has no listing by prefix, and a snapshot is put or looked for far less often than a jar.
func (l *Logins) snapshots(ctx context.Context, storeID string) ([]storedSnapshot, error) {
	all, err := l.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	prefix := snapPrefix(storeID)
	var out []storedSnapshot
	for _, info := range all {
		if !strings.HasPrefix(info.Name, prefix) {
			continue
		}
		at, err := timeOf(info)
		if err != nil {
			continue // not one of ours
		}
		out = append(out, storedSnapshot{name: info.Name, at: at, nuid: info.NUID})
	}
	sortNewestFirst(out)
	return out, nil
}

func sortNewestFirst(s []storedSnapshot) {
	slices.SortFunc(s, func(a, b storedSnapshot) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(b.name, a.name)
	})
}

// How often, and how far apart, PutSnapshot lists a store's snapshots again before its prune.
const (
	pruneListTries = 10
	pruneListPause = 100 * time.Millisecond
)

// PutSnapshot keeps snapshot id of store storeID, taken at at, read from r, and keeps the store's newest
// keep snapshots in the bucket (older ones are deleted); one older than every snapshot kept is not put. A
// store Forget removed takes none again (an error of class errdefs.ErrConflict).
func (l *Logins) PutSnapshot(ctx context.Context, storeID, id string, r io.Reader, at time.Time) error {
	if err := checkName("store id", storeID); err != nil {
		return err
	}
	if err := checkName("snapshot id", id); err != nil {
		return err
	}
	if _, jar, err := l.last(ctx, jarName(storeID)); err != nil {
		return fmt.Errorf("put snapshot %s of store %s: %w", id, storeID, err)
	} else if jar != nil && jar.Deleted {
		return forgotten(storeID)
	}
	kept, err := l.snapshots(ctx, storeID)
	if err != nil {
		return fmt.Errorf("put snapshot %s of store %s: %w", id, storeID, err)
	}
	name := snapPrefix(storeID) + id
	if len(kept) >= l.keep && !at.After(kept[l.keep-1].at) && !slices.ContainsFunc(kept, func(s storedSnapshot) bool { return s.name == name }) {
		return nil
	}
	info, err := l.obs.Put(ctx, jetstream.ObjectMeta{Name: name, Metadata: metaOf(at)}, r)
	if err != nil {
		return fmt.Errorf("put snapshot %s of store %s: %w", id, storeID, err)
	}
	kept = slices.DeleteFunc(kept, func(s storedSnapshot) bool { return s.name == name })
	kept = append(kept, storedSnapshot{name: name, at: at, nuid: info.NUID})
	// The listing before the put may have trailed the bucket (a replica behind its leader): the prune reads it
	// again, until it shows the snapshot just put, and takes the union of both.
	for try := 0; try < pruneListTries; try++ {
		now, err := l.snapshots(ctx, storeID)
		if err == nil && slices.ContainsFunc(now, func(s storedSnapshot) bool { return s.name == name }) {
			for _, s := range now {
				if !slices.ContainsFunc(kept, func(k storedSnapshot) bool { return k.name == s.name }) {
					kept = append(kept, s)
				}
			}
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(pruneListPause):
		}
	}
	sortNewestFirst(kept)
	var errs []error
	for _, old := range kept[min(l.keep, len(kept)):] {
		errs = append(errs, l.remove(ctx, old.name, old.nuid))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("put snapshot %s of store %s: older ones not pruned: %w", id, storeID, err)
	}
	return nil
}

// remove removes object name, whose bytes are on nuid, leaving no delete marker behind (the bucket is listed
// whole: markers of every pruned snapshot would pile up in each listing).
func (l *Logins) remove(ctx context.Context, name, nuid string) error {
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(metaSubject(name))); err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(chunkSubject(nuid))); err != nil {
		return fmt.Errorf("remove %s's bytes: %w", name, err)
	}
	return nil
}

// NewestSnapshot is store storeID's newest snapshot on the cluster: its id, when it was taken, and its sealed
// bytes, read as rc is read (ctx's deadline bounds the whole transfer; the caller closes rc). An error of
// class errdefs.ErrNotFound when the cluster holds none.
func (l *Logins) NewestSnapshot(ctx context.Context, storeID string) (string, time.Time, io.ReadCloser, error) {
	if err := checkName("store id", storeID); err != nil {
		return "", time.Time{}, nil, err
	}
	kept, err := l.snapshots(ctx, storeID)
	if err != nil {
		return "", time.Time{}, nil, fmt.Errorf("the snapshots of store %s: %w", storeID, err)
	}
	if len(kept) == 0 {
		return "", time.Time{}, nil, errdefs.NotFound("the cluster holds no snapshot of store %s", storeID)
	}
	res, err := l.obs.Get(ctx, kept[0].name)
	if err != nil {
		return "", time.Time{}, nil, fmt.Errorf("get snapshot %s: %w", kept[0].name, err)
	}
	return strings.TrimPrefix(kept[0].name, snapPrefix(storeID)), kept[0].at, res, nil
}

// Forget removes every object of store storeID (a removed store), and marks its jar removed so that a copy
// still on its way from a host that had not heard of the removal is refused (PutJar, PutSnapshot).
func (l *Logins) Forget(ctx context.Context, storeID string) error {
	if err := checkName("store id", storeID); err != nil {
		return err
	}
	name := jarName(storeID)
	for try := 0; ; try++ {
		seq, cur, err := l.last(ctx, name)
		if err != nil {
			return fmt.Errorf("forget store %s: %w", storeID, err)
		}
		if cur != nil && cur.Deleted {
			break
		}
		marker := jetstream.ObjectInfo{ObjectMeta: jetstream.ObjectMeta{Name: name}, Bucket: BucketLogins,
			NUID: rand.Text(), Deleted: true}
		err = l.publishInfo(ctx, &marker, seq)
		if err == nil {
			if cur != nil {
				l.purge(chunkSubject(cur.NUID))
			}
			break
		}
		if !lostRace(err) || try == casTries {
			return fmt.Errorf("forget store %s: %w", storeID, err)
		}
	}
	kept, err := l.snapshots(ctx, storeID)
	if err != nil {
		return fmt.Errorf("forget store %s: %w", storeID, err)
	}
	var errs []error
	for _, s := range kept {
		errs = append(errs, l.remove(ctx, s.name, s.nuid))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("forget store %s: %w", storeID, err)
	}
	return nil
}
