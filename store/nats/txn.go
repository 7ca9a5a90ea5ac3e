package nats

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// txn is one write transaction: the changes a call makes, computed against
// the host's state at revision base and committed as one JetStream atomic
// batch that the server accepts only if the stream is still at base
// (optimistic concurrency: another host's commit in between makes the
// batch fail, and the call runs again on the newer state).
type txn struct {
	s    *Store
	st   *state
	base uint64
	now  time.Time
	id   string // set by messages

	uploaded map[string]string // content this call uploaded: sha256 → gen
	inline   map[string][]byte // small content offered for inline storage
	changes
}

// changes are what a transaction changed so far; records are never
// changed in place before messages, so a savepoint (clone) that rolls
// back one call of a group copies the maps, not the records.
type changes struct {
	entries map[string]*record // path → new record; nil: removed
	order   []string           // paths in the order of their last change
	evicted map[string]bool    // paths whose last change is an eviction
	moved   map[string]string  // paths whose last change is a move: → the path moved from
	blobs   overlay[blobRecord]
	uploads overlay[uploadRecord]
	gcDone  []string // gc keys whose chunks are deleted
	gcData  []string // ids of inline content whose bytes are deleted
	c       counters
	stored  int64 // stored bytes as of the changes so far

	used          map[string]bool // uploaded content the transaction references
	touched       []string        // content used by the transaction (LRU)
	rules.Touched                 // directories whose times move (see messages)

	vers   overlay[rules.Version]  // by version key
	snaps  overlay[store.Snapshot] // by name
	dtDrop []string                // keys of directory times dropped
}

func (c changes) clone() changes {
	c.entries, c.evicted, c.moved, c.used, c.Touched = maps.Clone(c.entries), maps.Clone(c.evicted), maps.Clone(c.moved), maps.Clone(c.used), maps.Clone(c.Touched)
	c.blobs, c.uploads, c.vers, c.snaps = c.blobs.clone(), c.uploads.clone(), c.vers.clone(), c.snaps.clone()
	c.order, c.gcDone, c.gcData, c.touched = slices.Clone(c.order), slices.Clone(c.gcDone), slices.Clone(c.gcData), slices.Clone(c.touched)
	c.dtDrop = slices.Clone(c.dtDrop)
	return c
}

// overlay is a transaction's changes to one kind of record over the
// state's: key → the new record (nil: deleted), with the keys in the
// order of their first change.
type overlay[V any] struct {
	m    map[string]*V
	keys []string
}

// set records v (nil: deleted) at k.
func (o *overlay[V]) set(k string, v *V) {
	if _, ok := o.m[k]; !ok {
		o.keys = append(o.keys, k)
	}
	if o.m == nil {
		o.m = map[string]*V{}
	}
	o.m[k] = v
}

// get returns the record at k as of the transaction: the change, else
// st's (the state's); nil when there is none.
func (o overlay[V]) get(k string, st map[string]*V) *V {
	if v, ok := o.m[k]; ok {
		return v
	}
	return st[k]
}

func (o overlay[V]) clone() overlay[V] { return overlay[V]{maps.Clone(o.m), slices.Clone(o.keys)} }

// offer makes data, the content sum, available for inline storage if the
// store's InlineBytes allows: a blob created for it then lives in the
// tree bucket, with no chunk to upload.
func (t *txn) offer(sum string, data []byte) {
	if int64(len(data)) <= t.s.opts.InlineBytes {
		t.inline[sum] = data
	}
}

// needContent asks the caller of update to upload a blob's chunks, then
// run the transaction again.
type needContent struct{ sum string }

func (e needContent) Error() string { return "content " + e.sum + " must be uploaded first" }

// errConflict reports a batch refused because the stream moved on.
var errConflict = errors.New("the tree changed on another host")

// errRetry reports a batch that was not committed and may be sent again
// at once.
var errRetry = errors.New("the batch was not committed")

// update runs fn in a transaction and commits it, running it again on the
// newer state when another host committed first. fn may ask for content
// to be uploaded (needContent); upload does it, outside the host's write
// lock. Content uploaded but left unused is deleted again.
func (s *Store) update(ctx context.Context, fn func(t *txn) error, upload func(ctx context.Context, sum string) (string, error)) error {
	return s.updateUploaded(ctx, fn, upload, map[string]string{})
}

// updateUploaded is update for a call that already uploaded content
// (sha256 → generation); what the committed change does not reference is
// deleted. The whole call, however often it runs again, takes at most
// Options.WriteTimeout: a cluster that cannot commit that long makes it
// fail with store.ErrUnavailable.
func (s *Store) updateUploaded(ctx context.Context, fn func(t *txn) error, upload func(ctx context.Context, sum string) (string, error), uploaded map[string]string) error {
	wctx, cancel := s.writeCtx(ctx)
	defer cancel()
	deadline, _ := wctx.Deadline()
	j := &job{fn: fn, uploaded: uploaded, keep: map[string]bool{}, deadline: deadline}
	defer func() {
		for sum, gen := range j.uploaded {
			if !j.keep[sum] {
				s.chunks.drop(context.WithoutCancel(ctx), s.chunks.addr.id(sum), gen)
			}
		}
	}()
	err := s.run(wctx, j, upload)
	if err != nil && outOfTime(wctx) && !errors.Is(err, store.ErrUnavailable) {
		err = fmt.Errorf("%w: no commit within %v: %w", store.ErrUnavailable, s.opts.WriteTimeout, err)
	}
	return err
}

// errWriteTimeout is the cause of a write's context ending at its time
// limit.
var errWriteTimeout = errors.New("the write's time limit ran out")

// writeCtx bounds a write call by Options.WriteTimeout (or ctx's earlier
// deadline).
func (s *Store) writeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, s.opts.WriteTimeout, errWriteTimeout)
}

// outOfTime reports whether ctx ended at the time limit of a write.
func outOfTime(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errWriteTimeout) }

// run commits j, running its function again as long as its batch was
// refused for a change committed meanwhile.
func (s *Store) run(ctx context.Context, j *job, upload func(ctx context.Context, sum string) (string, error)) error {
	stale := 0
	for {
		j.refused = false
		if err := s.check(ctx); err != nil {
			return err
		}
		t, err := s.attempt(ctx, j)
		var need needContent
		switch {
		case errors.As(err, &need):
			if upload == nil {
				return fmt.Errorf("corrupt store: content %s is missing", need.sum)
			}
			gen, err := upload(ctx, need.sum)
			if err != nil {
				return err
			}
			j.uploaded[need.sum] = gen
			continue
		case errors.Is(err, errRetry):
			continue
		case errors.Is(err, errConflict):
			if err := s.view.waitFor(ctx, t.base+1); err != nil {
				return err
			}
			continue
		case err != nil && j.refused && stale < maxStaleRuns && s.behind(ctx, t.base):
			// Refused on a state the cluster had already left: this host
			// was catching up, and may have shown part of the tree's
			// history that no write was computed on. Decide again on
			// the current state.
			stale++
			continue
		case err != nil:
			return err
		}
		s.uses.touch(t.touched...)
		return nil
	}
}

// maxStaleRuns bounds how often a call refused on a state that was not
// the cluster's latest runs again: a refusal that holds on the latest
// state is returned even while other hosts keep writing.
const maxStaleRuns = 3

// behind reports whether the tree had moved past base when this host
// caught up with the cluster (see catchUp); it then has applied the
// newer state.
func (s *Store) behind(ctx context.Context, base uint64) bool {
	if s.sync(ctx) != nil {
		return false
	}
	return s.view.applied() > base
}

// job is one call's transaction function waiting to be committed, alone or
// with others queued on the same host at the same time (group commit).
type job struct {
	fn       func(t *txn) error
	uploaded map[string]string // content the call uploaded: sha256 → gen
	keep     map[string]bool   // uploaded content a batch that may be committed references
	alone    bool              // commit without others (its group's batch was too large)
	deadline time.Time         // when the call gives up
	refused  bool              // its function failed (rather than its commit)

	t    *txn
	err  error
	done chan struct{}
}

// maxGroup bounds the calls one batch commits together.
const maxGroup = 64

// attempt runs j's function once and commits what it changed, together
// with the functions other calls queued meanwhile: the first caller to get
// the host's write lock runs every queued function on one state and
// commits them as one batch, so concurrent writes on a host share one
// round trip and one fsync. A function that fails is rolled back alone.
func (s *Store) attempt(ctx context.Context, j *job) (*txn, error) {
	j.done = make(chan struct{})
	s.qmu.Lock()
	s.queue = append(s.queue, j)
	s.qmu.Unlock()
	if !s.lockWrites(ctx) {
		// Out of time before this host's earlier writes finished: j
		// leaves the queue, unless a group took it meanwhile.
		s.qmu.Lock()
		i := slices.Index(s.queue, j)
		if i >= 0 {
			s.queue = slices.Delete(s.queue, i, i+1)
		}
		s.qmu.Unlock()
		if i >= 0 {
			return nil, fmt.Errorf("waiting for this host's earlier writes: %w", ctx.Err())
		}
		<-j.done
		return j.t, j.err
	}
	defer s.unlockWrites()
	select {
	case <-j.done: // committed (or refused) by another caller's group
		return j.t, j.err
	default:
	}
	s.qmu.Lock()
	jobs := []*job{j}
	var rest []*job
	for _, q := range s.queue {
		switch {
		case q == j:
		case !j.alone && !q.alone && len(jobs) < maxGroup:
			jobs = append(jobs, q)
		default:
			rest = append(rest, q)
		}
	}
	s.queue = rest
	s.qmu.Unlock()
	// The group outlives a caller that leaves early (the others wait on
	// it), but not the first caller's time limit.
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), j.deadline)
	defer cancel()
	s.commitGroup(ctx, jobs)
	return j.t, j.err
}

// lockWrites takes the host's write lock, unless ctx ends first.
func (s *Store) lockWrites(ctx context.Context) bool {
	select {
	case s.wlock <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// unlockWrites releases the host's write lock.
func (s *Store) unlockWrites() { <-s.wlock }

// commitGroup runs and commits jobs; each job gets its outcome.
func (s *Store) commitGroup(ctx context.Context, jobs []*job) {
	var in []*job
	finish := func(j *job, t *txn, err error) {
		j.t, j.err = t, err
		close(j.done)
	}
	if s.closed.Load() {
		for _, j := range jobs {
			finish(j, nil, store.ErrClosed)
		}
		return
	}
	s.view.mu.RLock()
	st := s.view.st
	t := &txn{
		s: s, st: st, base: st.rev, now: s.now(),
		uploaded: map[string]string{}, inline: map[string][]byte{},
		changes: changes{
			entries: map[string]*record{}, evicted: map[string]bool{}, moved: map[string]string{},
			c: st.counters, stored: st.stored, used: map[string]bool{},
		},
	}
	for _, j := range jobs {
		for sum, gen := range j.uploaded {
			if _, ok := t.uploaded[sum]; !ok {
				t.uploaded[sum] = gen
			}
		}
	}
	// Calls of one group never change the same path: the batch writes
	// one record per path, so the earlier call's record would be
	// replaced before it had a revision, and that call answered with a
	// revision of nothing (and its record kept by no history, as it
	// would be on its own). Such a call waits for the next group.
	claimed := map[string]bool{}
	for _, j := range jobs {
		sp := t.changes.clone()
		if err := j.fn(t); err != nil {
			t.changes = sp
			j.refused = true
			finish(j, t, err)
			continue
		}
		changed := t.changedSince(sp)
		// A snapshot changed after another call of the group changed
		// entries waits for the next group too: that call trimmed its
		// paths' history not counting what the snapshot holds, so it
		// could drop a version the contract keeps (holdReplaced marks
		// the replaced record held, but cannot bring back what the
		// trim dropped).
		if slices.ContainsFunc(changed, func(p string) bool { return claimed[p] }) || (len(claimed) > 0 && t.snapsChangedSince(sp)) {
			t.changes = sp
			finish(j, t, errRetry)
			continue
		}
		for _, p := range changed {
			claimed[p] = true
		}
		in = append(in, j)
	}
	var msgs []*nats.Msg
	var err error
	if len(in) > 0 {
		msgs, err = t.messages()
	}
	s.view.mu.RUnlock()
	if err != nil && len(in) > 1 {
		// Together too large for one batch: each again on its own.
		for _, j := range in {
			j.alone = true
			finish(j, t, errRetry)
		}
		return
	}
	if err == nil && len(msgs) > 0 {
		// From here the batch may be committed even if the call fails (a
		// timeout after the server stored it): content it references
		// must not be deleted as unused.
		for _, j := range in {
			for sum, gen := range j.uploaded {
				if t.used[sum] && t.uploaded[sum] == gen {
					j.keep[sum] = true
				}
			}
		}
		err = s.commit(ctx, t, msgs)
	}
	for _, j := range in {
		finish(j, t, err)
	}
}

// snapsChangedSince reports whether the transaction created, changed or
// deleted a snapshot after the savepoint sp.
func (t *txn) snapsChangedSince(sp changes) bool {
	for name, s := range t.snaps.m {
		if old, ok := sp.snaps.m[name]; !ok || old != s {
			return true
		}
	}
	return false
}

// changedSince returns the paths whose entry the transaction changed
// after the savepoint sp.
func (t *txn) changedSince(sp changes) []string {
	var out []string
	for p, r := range t.entries {
		if old, ok := sp.entries[p]; !ok || old != r {
			out = append(out, p)
		}
	}
	return out
}

// Message headers the store adds to the tree bucket's messages.
const (
	// hdrCommit on every message of a batch is the sequence of its last
	// message: a host applies a batch only once it has all of it, so its
	// readers see whole changes.
	hdrCommit = "Depot-Commit"
	// hdrEvicted marks an entry change that is an eviction.
	hdrEvicted = "Depot-Evicted"
	// hdrTxn on a batch's first message (the host's marker) identifies
	// the transaction, so a
	// host whose commit went unconfirmed can tell whether it happened.
	hdrTxn = "Depot-Txn"
	// hdrTouch marks a directory record whose times alone moved.
	hdrTouch = "Depot-Touch"
	// hdrMoved on an entry change a move made is the path it was moved
	// from, escaped as a URL path (store.Event.From).
	hdrMoved = "Depot-Moved-From"
	// kvOperation is the KV header for deletions.
	kvOperation = "KV-Operation"
)

// messages turns the transaction into the messages of its batch: blobs,
// uploads, gc records and counters first, then entries in the order of
// their changes, so the last message (the store's revision after the
// commit) is an entry's. It assigns the new entries' inodes and every
// changed entry's revision: the sequence its message will get. Every
// record is encoded here, with its content hashes sealed in a depot with
// keyed addresses (addresses.marshal).
func (t *txn) messages() ([]*nats.Msg, error) {
	var msgs []*nats.Msg
	var encErr error // the first record that would not encode
	addr := t.s.chunks.addr
	add := func(key string, v any) {
		m := nats.NewMsg(t.s.subject(key))
		if v == nil {
			m.Header.Set(kvOperation, "DEL")
		} else {
			var err error
			m.Data, err = addr.marshal(v)
			encErr = cmp.Or(encErr, err)
		}
		msgs = append(msgs, m)
	}
	// The batch opens with this host's marker, which carries the
	// transaction's id: only this host's next batch replaces it, and this
	// host sends none before it knows this one's fate (see Store.settle),
	// so a host catching up always reads it.
	t.id = nuid.Next()
	marker := nats.NewMsg(t.s.subject(keyHostPrefix + t.s.host))
	marker.Header.Set(hdrTxn, t.id)
	msgs = append(msgs, marker)
	for _, sum := range t.blobs.keys {
		b := t.blobs.m[sum]
		id, h := addr.id(sum), ""
		if addr.keyed() {
			var err error
			h, err = addr.seal(sum)
			encErr = cmp.Or(encErr, err)
		}
		switch {
		case b.Refs > 0:
			if b.Gen == genInline && t.st.blobs[sum] == nil {
				m := nats.NewMsg(t.s.subject(dataKey(id)))
				m.Data = t.s.chunks.sealData(dataKey(id), t.inline[sum])
				msgs = append(msgs, m)
			}
			c := *b
			c.H = h
			add(blobKey(id), &c)
		default:
			if t.st.blobs[sum] != nil {
				add(blobKey(id), nil)
				if h != "" {
					// The key names only the address: the marker
					// says whose it is (see state.applyOne).
					var err error
					msgs[len(msgs)-1].Data, err = json.Marshal(blobRecord{H: h})
					encErr = cmp.Or(encErr, err)
				}
			}
			add(gcKey(id, b.Gen), gcRecord{At: t.now, H: h})
		}
	}
	var completed []string
	for _, k := range t.uploads.keys {
		switch u := t.uploads.m[k]; {
		case u == nil && t.st.uploads[k] != nil:
			add(k, nil)
		case u != nil && u.done != nil:
			completed = append(completed, k)
		case u != nil:
			add(k, u)
		}
	}
	for _, k := range t.gcDone {
		add(k, nil)
	}
	for _, k := range t.dtDrop {
		add(k, nil)
	}
	for _, id := range t.gcData {
		add(dataKey(id), nil)
	}
	for _, dir := range slices.Sorted(maps.Keys(t.Touched)) {
		if dir == depotpath.Root {
			if !t.st.rootTime.Equal(t.now) {
				t.keepDirTime(add, dir, 0, t.st.rootTime, t.st.rootTime)
				add(keyRoot, rootRecord{MTime: t.now})
			}
			continue
		}
		r := t.get(dir)
		if r == nil || r.Kind != store.KindDir || (r.MTime.Equal(t.now) && r.Updated.Equal(t.now)) {
			continue
		}
		if _, written := t.entries[dir]; written {
			r.MTime, r.Updated = t.now, t.now
			continue
		}
		t.keepDirTime(add, dir, r.Revision, r.MTime, r.Updated)
		next := *r
		next.MTime, next.Updated, next.Rev = t.now, t.now, r.Revision
		add(entryKey(dir), &next)
		msgs[len(msgs)-1].Header.Set(hdrTouch, "1")
	}
	if t.c != t.st.counters {
		add(keyCounters, t.c)
	}
	seq := map[string]uint64{} // each changed path's message
	for _, p := range t.order {
		r := t.entries[p]
		if r == nil {
			if t.st.entries[p] != nil {
				add(entryKey(p), nil)
				seq[p] = t.base + uint64(len(msgs))
			}
			continue
		}
		r.Revision = t.base + uint64(len(msgs)) + 1
		if r.Ino == 0 {
			r.Ino = r.Revision + 1
		}
		add(entryKey(p), r)
		seq[p] = r.Revision
		if t.evicted[p] {
			msgs[len(msgs)-1].Header.Set(hdrEvicted, "1")
		}
		if from, ok := t.moved[p]; ok {
			msgs[len(msgs)-1].Header.Set(hdrMoved, url.PathEscape(from))
		}
	}
	t.changeMessages(add, seq)
	if err := cmp.Or(t.versionMessages(add, seq), encErr); err != nil {
		return nil, err
	}
	// A completed upload keeps its result, entry revision included, to
	// answer retried chunks.
	for _, k := range completed {
		u := t.uploads.m[k]
		res := u.done.Result()
		u.Result = &res
		add(k, u)
	}
	if len(msgs) > t.s.opts.MaxBatch {
		return nil, fmt.Errorf("%w: the change writes %d records (a new small file takes three), one commit holds at most %d (--nats-max-batch; the servers' jetstream limits batch max_msgs must allow as many)",
			store.ErrBatchLimit, len(msgs), t.s.opts.MaxBatch)
	}
	commit := strconv.FormatUint(t.base+uint64(len(msgs)), 10)
	for _, m := range msgs {
		m.Header.Set(hdrCommit, commit)
	}
	if len(msgs) == 1 {
		return nil, nil // the marker alone: nothing changed
	}
	return msgs, nil
}
