package bolt

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/evictplan"
	"github.com/depotfs/depotfs/store/internal/rules"
	bbolt "go.etcd.io/bbolt"
)

// makeRoom evicts blobs, least recently used first, until the stored
// content and the chunks of uploads in progress together fit
// Options.MaxStoreBytes again. keep (the content just written) and blobs
// used by pinned files are never evicted. When the
// evictable blobs are not enough it evicts nothing and fails with
// store.ErrLimit, and the caller's transaction is rolled back.
//
// An evicted blob is dropped whole: every file using it stays in the tree
// as a placeholder (Present false, SHA256 "", its other metadata kept),
// with an EventEvicted at a new revision.
func (w *wtx) makeRoom(keep hash) (store.Evictions, error) {
	holds, err := rules.NewHolds(w)
	if err != nil {
		return store.Evictions{}, err
	}
	// Content only history uses goes first, then live content; each
	// least recently used first.
	cursors := []*bbolt.Cursor{w.tx.Bucket(bucketHistoryLRU).Cursor(), w.lru.Cursor()}
	c := cursors[0]
	k, _ := c.First()
	next := func() (hash, int64, bool, error) {
		for {
			for ; k != nil; k, _ = c.Next() {
				var h hash
				copy(h[:], k[8:])
				if h == keep {
					continue
				}
				b, ok, err := getBlob(w.blobs, h)
				if err != nil {
					return h, 0, false, err
				}
				if !ok {
					return h, 0, false, fmt.Errorf("corrupt store: lru lists blob %x, which does not exist", h)
				}
				held, err := w.held(holds, h, b.Size)
				if err != nil {
					return h, 0, false, err
				}
				if held {
					continue
				}
				k, _ = c.Next()
				return h, b.Size, true, nil
			}
			if len(cursors) == 1 {
				return hash{}, 0, false, nil
			}
			cursors = cursors[1:]
			c = cursors[0]
			k, _ = c.First()
		}
	}
	ev, err := evictplan.MakeRoom(w.c.Stored, w.stagedBytes(), w.s.opts.MaxStoreBytes, next, w.evict)
	if err != nil {
		return store.Evictions{}, holds.Limit(w, err)
	}
	w.c.Evictions += int64(ev.Count)
	w.c.EvictedBytes += ev.Bytes
	return ev, nil
}

// stagedBytes is what the chunks of all uploads in progress hold, this
// transaction's changes included.
func (w *wtx) stagedBytes() int64 { return w.s.staged.bytes.Load() + w.staged.bytes }

// evict drops blob h: every file using it becomes a placeholder (see
// rules.Evict).
func (w *wtx) evict(h hash, ev *store.Evictions) error {
	b, _, err := getBlob(w.blobs, h)
	if err != nil {
		return err
	}
	users, versions, err := w.users(h)
	if err != nil {
		return err
	}
	return rules.Evict(w, hex.EncodeToString(h[:]), b.Size, b.Refs, users, versions, ev)
}

// users returns the files and the retained versions using blob h.
func (w *wtx) users(h hash) (files []string, versions []rules.Version, err error) {
	c := w.refs.Cursor()
	for k, _ := c.Seek(h[:]); k != nil && bytes.HasPrefix(k, h[:]); k, _ = c.Next() {
		p, rev, isVersion := bytes.Cut(k[len(h):], []byte{0})
		if !isVersion {
			files = append(files, string(p))
			continue
		}
		v := w.versions.Get(versionKey(string(p), u64(rev)))
		if v == nil {
			return nil, nil, fmt.Errorf("corrupt store: refs lists version %s@%d, which does not exist", p, u64(rev))
		}
		ver, err := decodeVersion(versionKey(string(p), u64(rev)), v)
		if err != nil {
			return nil, nil, err
		}
		versions = append(versions, ver)
	}
	return files, versions, nil
}

// held reports whether a snapshot holds a live file using blob h (holds
// counts its size against the snapshot).
func (w *wtx) held(holds *rules.Holds, h hash, size int64) (bool, error) {
	if !holds.Any() {
		return false, nil
	}
	files, _, err := w.users(h)
	if err != nil {
		return false, err
	}
	for _, p := range files {
		r, err := getEntry(w.tree, p)
		if err != nil {
			return false, err
		}
		if r != nil && holds.Held(p, r, size) {
			return true, nil
		}
	}
	return false, nil
}
