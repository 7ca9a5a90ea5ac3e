package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
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
	fp, err := w.snapshotSet()
	if err != nil {
		return store.Evictions{}, err
	}
	// Content only history uses goes first, then live content; each
	// least recently used first. The live content snapshots hold is
	// passed over where a walk found it before (see heldSkip).
	cursors := []*bbolt.Cursor{w.tx.Bucket(bucketHistoryLRU).Cursor(), w.lru.Cursor()}
	c := cursors[0]
	k, _ := c.First()
	live, run := false, true // walking the live index; every live blob so far held
	var lastHeld []byte
	next := func() (hash, int64, bool, error) {
		for {
			for ; k != nil; k, _ = c.Next() {
				var h hash
				copy(h[:], k[8:])
				if h == keep {
					run = run && !live
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
					if live && run {
						lastHeld = append(lastHeld[:0], k...)
					}
					continue
				}
				run = run && !live
				k, _ = c.Next()
				return h, b.Size, true, nil
			}
			if len(cursors) == 1 {
				return hash{}, 0, false, nil
			}
			cursors = cursors[1:]
			c, live = cursors[0], true
			k, _ = c.First()
			if from := w.skipFrom(fp); from != nil {
				lastHeld = slices.Clone(from)
				if k, _ = c.Seek(from); bytes.Equal(k, from) {
					k, _ = c.Next()
				}
			}
		}
	}
	ev, err := evictplan.MakeRoom(w.c.Stored, w.stagedBytes(), w.s.opts.MaxStoreBytes, next, w.evict)
	if lastHeld != nil && fp != "" {
		w.skipNext, w.lruIn = &heldSkip{snaps: fp, key: lastHeld}, nil
	}
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
	return rules.Evict(w, w.plainSum(h, users, versions), b.Size, b.Refs, users, versions, ev)
}

// plainSum is the plain SHA-256, in hex, of the content stored under h,
// which files and versions use: h itself unless the store is keyed, else
// the hash in the first record using it. An address that no record uses
// is returned in hex, which then matches none (rules.Evict reports it).
func (w *wtx) plainSum(h hash, files []string, versions []rules.Version) string {
	sl := w.s.sealer
	if !sl.keyed() {
		return hex.EncodeToString(h[:])
	}
	for _, v := range versions {
		if k, err := sl.blobKey(entryrec.PresentSum(v.Rec)); err == nil && k == h {
			return v.Rec.SHA256
		}
	}
	for _, p := range files {
		r, err := getEntry(w.tree, p, sl)
		if err != nil || r == nil {
			continue
		}
		if k, err := sl.blobKey(entryrec.PresentSum(r)); err == nil && k == h {
			return r.SHA256
		}
	}
	return hex.EncodeToString(h[:])
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
		ver, err := decodeVersion(versionKey(string(p), u64(rev)), v, w.s.sealer)
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
		r, err := getEntry(w.tree, p, w.s.sealer)
		if err != nil {
			return false, err
		}
		if r != nil && holds.Held(p, r, size) {
			return true, nil
		}
	}
	return false, nil
}

// heldSkip is where, in the live lru index, the content the snapshots
// hold ends: a walk of makeRoom found every blob up to key (inclusive)
// held by a live file a snapshot saw, for the set of snapshots snaps.
// With a snapshot of the whole tree that is most of the index, and
// without it every growing write near the limit would walk it all again.
// Such a blob stays held as long as the set does: a held file that
// changes or goes becomes a held version, whose content is pinned and
// leaves the index. What can break it is a blob entering the index at a
// key up to key (content unpinned, its last use long ago) to stay: every
// commit checks for that (wtx.lruIn; a new blob enters at use 0 and moves
// on at once, when its write uses it). Store.skip is read and written
// under Store.wmu only.
//
// A snapshot of the whole tree holds every blob in the live index when it
// is created, so its creation sets the skip at the index's last key
// (holdAll), and the skip is kept in the meta bucket with the revision
// it is valid at (keyHeldSkip), so neither the first write after the
// snapshot nor the first after a restart walks the held content.
type heldSkip struct {
	snaps string
	key   []byte
}

// keyHeldSkip is the meta key of the store's heldSkip: the revision the
// file had when it was written, the length of snaps, snaps and key. A
// depotfs that does not know it changes the revision, so Open ignores a
// skip written before another program's writes.
var keyHeldSkip = []byte("held-skip")

// encode is h as kept at revision rev (see keyHeldSkip).
func (h heldSkip) encode(rev uint64) []byte {
	b := binary.BigEndian.AppendUint64(nil, rev)
	b = binary.AppendUvarint(b, uint64(len(h.snaps)))
	b = append(b, h.snaps...)
	return append(b, h.key...)
}

// loadSkip returns the heldSkip kept in meta when it was written at
// revision rev; the zero heldSkip otherwise.
func loadSkip(meta *bbolt.Bucket, rev uint64) heldSkip {
	v := meta.Get(keyHeldSkip)
	if len(v) < 8 || binary.BigEndian.Uint64(v) != rev {
		return heldSkip{}
	}
	rest := v[8:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n >= uint64(len(rest)-k) { // no key after snaps
		return heldSkip{}
	}
	rest = rest[k:]
	return heldSkip{snaps: string(rest[:n]), key: slices.Clone(rest[n:])}
}

// holdAll sets the skip past the whole live lru index when the snapshots
// holding content now include s, a snapshot of the whole tree created in
// w: every blob there is used by a live file, which s holds (see
// heldSkip).
func (w *wtx) holdAll(s store.Snapshot) error {
	if s.Prefix != depotpath.Root || len(rules.Holding([]store.Snapshot{s}, w.now)) == 0 {
		return nil
	}
	fp, err := w.snapshotSet()
	if err != nil {
		return err
	}
	last, _ := w.lru.Cursor().Last()
	if last == nil {
		return nil
	}
	w.skipNext, w.lruIn = &heldSkip{snaps: fp, key: slices.Clone(last)}, nil
	return nil
}

// snapshotSet names the snapshots that hold content now ("" for none):
// a heldSkip found for another set does not apply.
func (w *wtx) snapshotSet() (string, error) {
	snaps, err := w.Snapshots()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, s := range rules.Holding(snaps, w.now) {
		b.WriteString(strconv.Quote(s.Name) + strconv.Quote(s.Prefix) + strconv.FormatUint(s.Revision, 10) + ";")
	}
	return b.String(), nil
}

// skipFrom returns the key of the live lru index up to which every blob
// is held by the snapshots fp names, nil when that is not known.
func (w *wtx) skipFrom(fp string) []byte {
	cand := w.s.skip
	if w.skipNext != nil {
		cand = *w.skipNext
	}
	if fp == "" || cand.snaps != fp || cand.key == nil || w.enteredUpTo(cand.key) {
		return nil
	}
	return cand.key
}

// enteredLRU notes that key was put into the live lru index (see
// heldSkip).
func (w *wtx) enteredLRU(key []byte) { w.lruIn = append(w.lruIn, slices.Clone(key)) }

// enteredUpTo reports whether a key w put into the live lru index (since
// makeRoom last walked it) at or before key is still there.
func (w *wtx) enteredUpTo(key []byte) bool {
	c := w.lru.Cursor()
	for _, k := range w.lruIn {
		if bytes.Compare(k, key) <= 0 {
			if got, _ := c.Seek(k); bytes.Equal(got, k) {
				return true
			}
		}
	}
	return false
}

// settleSkip decides, before w commits, what the store knows of the held
// content once it has (see keepSkip), and keeps it in the meta bucket at
// the revision w commits, whenever it changed or the revision did.
func (w *wtx) settleSkip() error {
	cand := w.s.skip
	if w.skipNext != nil {
		cand = *w.skipNext
	}
	if cand.key != nil && w.enteredUpTo(cand.key) {
		cand = heldSkip{}
	}
	w.skipNext = &cand
	same := cand.snaps == w.s.skip.snaps && bytes.Equal(cand.key, w.s.skip.key)
	switch {
	case same && len(w.events) == 0:
		return nil
	case cand.key == nil:
		return w.meta.Delete(keyHeldSkip)
	}
	return w.meta.Put(keyHeldSkip, cand.encode(w.rev))
}

// keepSkip makes what w found of the held content (settleSkip) the
// store's, once w has committed.
func (w *wtx) keepSkip() {
	if w.skipNext != nil {
		w.s.skip = *w.skipNext
	}
}
