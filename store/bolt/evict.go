package bolt

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/evictplan"
	"github.com/depotfs/depotfs/store/internal/rules"
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
	c := w.lru.Cursor()
	var k []byte
	started := false
	next := func() (hash, int64, bool, error) {
		if !started {
			k, _ = c.First()
			started = true
		}
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
			k, _ = c.Next()
			return h, b.Size, true, nil
		}
		return hash{}, 0, false, nil
	}
	ev, err := evictplan.MakeRoom(w.c.Stored, w.stagedBytes(), w.s.opts.MaxStoreBytes, next, w.evict)
	if err != nil {
		return store.Evictions{}, err
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
	var users []string
	c := w.refs.Cursor()
	for k, _ := c.Seek(h[:]); k != nil && bytes.HasPrefix(k, h[:]); k, _ = c.Next() {
		users = append(users, string(k[len(h):]))
	}
	return rules.Evict(w, hex.EncodeToString(h[:]), b.Size, b.Refs, users, ev)
}
