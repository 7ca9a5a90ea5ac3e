package bolt

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/depotfs/depotfs/store"
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
	limit := w.s.opts.MaxStoreBytes
	need := w.c.Stored + w.stagedBytes() - limit
	if limit == 0 || need <= 0 {
		return store.Evictions{}, nil
	}
	var victims []hash
	freed := int64(0)
	c := w.lru.Cursor()
	for k, _ := c.First(); k != nil && freed < need; k, _ = c.Next() {
		var h hash
		copy(h[:], k[8:])
		if h == keep {
			continue
		}
		b, ok, err := getBlob(w.blobs, h)
		if err != nil {
			return store.Evictions{}, err
		}
		if !ok {
			return store.Evictions{}, fmt.Errorf("corrupt store: lru lists blob %x, which does not exist", h)
		}
		victims = append(victims, h)
		freed += b.Size
	}
	if freed < need {
		return store.Evictions{}, fmt.Errorf("%w: the write needs %d more bytes than the store size limit of %d allows, and only %d bytes are evictable (the rest is pinned or just written)",
			store.ErrLimit, need, limit, freed)
	}
	var ev store.Evictions
	for _, h := range victims {
		if err := w.evict(h, &ev); err != nil {
			return store.Evictions{}, err
		}
	}
	w.c.Evictions += int64(ev.Count)
	w.c.EvictedBytes += ev.Bytes
	return ev, nil
}

// stagedBytes is what the chunks of all uploads in progress hold, this
// transaction's changes included.
func (w *wtx) stagedBytes() int64 { return w.s.staged.bytes.Load() + w.staged.bytes }

// evict makes every file using blob h a placeholder, which drops h.
func (w *wtx) evict(h hash, ev *store.Evictions) error {
	b, _, err := getBlob(w.blobs, h)
	if err != nil {
		return err
	}
	var paths []string
	c := w.refs.Cursor()
	for k, _ := c.Seek(h[:]); k != nil && bytes.HasPrefix(k, h[:]); k, _ = c.Next() {
		paths = append(paths, string(k[len(h):]))
	}
	sum := hex.EncodeToString(h[:])
	if uint64(len(paths)) != b.Refs {
		return fmt.Errorf("corrupt store: blob %s has %d references, %d files use it", sum, b.Refs, len(paths))
	}
	for _, p := range paths {
		r, err := getEntry(w.tree, p)
		if err != nil {
			return err
		}
		if r == nil || presentSum(r) != sum || r.Pinned {
			return fmt.Errorf("corrupt store: refs says %s uses blob %s", p, sum)
		}
		next := *r
		next.Present, next.SHA256, next.Updated = false, "", w.now
		if err := w.put(store.EventEvicted, p, &next); err != nil {
			return err
		}
		if err := w.unref(sum); err != nil {
			return err
		}
		ev.Count++
		if len(ev.Paths) < store.MaxEvictedPaths {
			ev.Paths = append(ev.Paths, p)
		}
	}
	ev.Bytes += b.Size
	return nil
}
