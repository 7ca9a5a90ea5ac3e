package nats

import (
	"cmp"
	"context"
	"slices"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/evictplan"
	"github.com/depotfs/depotfs/store/internal/rules"
	"github.com/nats-io/nuid"
)

// Put stores req.Data at req.Path: the content's chunks first, then the
// entry and its parents in one atomic batch; it returns once the servers
// acknowledged both. It is safe for concurrent use, on any number of
// hosts.
//
// Limits, eviction and conditions behave as in store.Store; eviction
// picks the content least recently used as seen by this host.
func (s *Store) Put(ctx context.Context, req store.PutRequest) (store.PutResult, error) {
	return rules.One(s.PutBatch(ctx, []store.PutRequest{req}))
}

// stagedBytes is what the chunks of all uploads in progress hold, this
// transaction's changes included; an upload being completed holds none.
func (t *txn) stagedBytes() int64 {
	n := t.st.uploadBytes
	for k, u := range t.uploads.m {
		if old := t.st.uploads[k]; old != nil && old.Result == nil {
			n -= old.Bytes
		}
		if u != nil && u.Result == nil && u.done == nil {
			n += u.Bytes
		}
	}
	return n
}

// MakeRoom evicts content, content only versions use first, then each
// least recently used first, until the stored
// content and the chunks of uploads in progress together fit
// Options.MaxStoreBytes again; keep (the content just
// written) and content used by pinned files are never evicted. When that
// cannot make room it fails with store.ErrLimit.
func (t *txn) MakeRoom(keep string) (store.Evictions, error) {
	limit := t.s.opts.MaxStoreBytes
	staged := t.stagedBytes()
	if limit == 0 || t.stored+staged <= limit {
		return store.Evictions{}, nil
	}
	type cand struct {
		sum     string
		history bool // only versions use it: it goes first
		use     uint64
		size    int64
	}
	holds, err := rules.NewHolds(t)
	if err != nil {
		return store.Evictions{}, err
	}
	var cands []cand
	seen := map[string]bool{keep: true}
	consider := func(sum string) {
		if seen[sum] {
			return
		}
		seen[sum] = true
		if b := t.blob(sum); b != nil && b.evictable() {
			cands = append(cands, cand{sum, b.heldOnly(), t.s.uses.order(sum), b.Size})
		}
	}
	for sum := range t.st.blobs {
		consider(sum)
	}
	for _, sum := range t.blobs.keys {
		consider(sum)
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if a.history != b.history {
			return map[bool]int{true: -1, false: 1}[a.history]
		}
		if c := cmp.Compare(a.use, b.use); c != 0 {
			return c
		}
		return cmp.Compare(a.sum, b.sum)
	})
	next := func() (string, int64, bool, error) {
		for len(cands) > 0 {
			c := cands[0]
			cands = cands[1:]
			if !t.held(holds, c.sum, c.size) {
				return c.sum, c.size, true, nil
			}
		}
		return "", 0, false, nil
	}
	ev, err := evictplan.MakeRoom(t.stored, staged, limit, next, t.evict)
	if err != nil {
		return store.Evictions{}, holds.Limit(t, err)
	}
	t.c.Evictions += int64(ev.Count)
	t.c.EvictedBytes += ev.Bytes
	return ev, nil
}

// evict drops content sum: every file using it becomes a placeholder
// (see rules.Evict).
func (t *txn) evict(sum string, ev *store.Evictions) error {
	b := t.blob(sum)
	users, versions := t.users(sum)
	return rules.Evict(t, sum, b.Size, b.Refs, users, versions, ev)
}

// users returns the paths that may use content sum and the versions that
// do, as of the transaction.
func (t *txn) users(sum string) ([]string, []rules.Version) {
	var users []string
	for p := range t.st.refs[sum].all {
		users = append(users, p)
	}
	for p, r := range t.entries {
		if entryrec.PresentSum(r.rec()) == sum && !t.st.refs[sum].has(p) {
			users = append(users, p)
		}
	}
	slices.Sort(users)
	var versions []rules.Version
	for k := range t.st.vrefs[sum] {
		if v := t.version(k); v != nil {
			versions = append(versions, *v)
		}
	}
	for k, v := range t.vers.m {
		if v != nil && t.st.vkeys[k] == nil && entryrec.PresentSum(v.Rec) == sum {
			versions = append(versions, *v)
		}
	}
	return users, versions
}

// held reports whether a snapshot holds a live file using content sum
// (holds counts its size against the snapshot).
func (t *txn) held(holds *rules.Holds, sum string, size int64) bool {
	if !holds.Any() {
		return false
	}
	users, _ := t.users(sum)
	for _, p := range users {
		if r := t.get(p); r != nil && entryrec.PresentSum(r.rec()) == sum && holds.Held(p, r.rec(), size) {
			return true
		}
	}
	return false
}

// PutBatch stores several whole files in one atomic batch (see
// store.Store.PutBatch): the content chunks first, then every entry
// together. It is safe for concurrent use.
func (s *Store) PutBatch(ctx context.Context, reqs []store.PutRequest) ([]store.PutResult, error) {
	if len(reqs) == 0 {
		return nil, s.check(ctx)
	}
	files := make([]streamed, len(reqs))
	data := map[string][]byte{}
	for i, req := range reqs {
		sum, err := s.limits().Put(req)
		if err != nil {
			return nil, &store.BatchError{Index: i, Path: req.Path, Err: err}
		}
		files[i] = streamed{sum: sum, size: int64(len(req.Data)), small: req.Data}
		data[sum] = req.Data
	}
	// Content the store does not hold is written as the chunks of a new
	// generation.
	return s.putFiles(ctx, reqs, files, func(ctx context.Context, sum string) (string, error) {
		gen, id := nuid.Next(), s.chunks.addr.id(sum)
		_, err := s.chunks.write(ctx, data[sum], s.chunkSize, func(i int) string { return s.chunks.blobSubject(id, gen, int64(i)) })
		return gen, err
	}, map[string]string{})
}

// putFiles commits reqs, whose content files holds, in one batch (see
// updateUploaded): content not written as chunks is offered inline, and
// upload writes what must be chunks (nil: all is). A refused request
// fails the whole with a *store.BatchError naming it.
func (s *Store) putFiles(ctx context.Context, reqs []store.PutRequest, files []streamed, upload func(ctx context.Context, sum string) (string, error), uploaded map[string]string) ([]store.PutResult, error) {
	outs := make([]*rules.Written, len(reqs))
	failed := 0
	err := s.updateUploaded(ctx, func(t *txn) error {
		for i, req := range reqs {
			f := files[i]
			if f.gen == "" {
				t.offer(f.sum, f.small)
			}
			var err error
			if outs[i], err = rules.Put(t, req, f.sum, f.size); err != nil {
				failed = i
				return err
			}
		}
		return nil
	}, upload, uploaded)
	if err != nil {
		p := reqs[failed].Path
		return nil, &store.BatchError{Index: failed, Path: p, Err: check.PathError("put", p, err)}
	}
	res := make([]store.PutResult, len(reqs))
	for i, o := range outs {
		res[i] = o.Result()
	}
	rules.Superseded(res)
	return res, nil
}
