package bolt

import (
	"bytes"
	"fmt"

	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/quota"
)

// The lru, refs and expiry buckets and the counters are derived from the
// tree and the blobs. Every change to a tree entry goes through index (from
// wtx.put and wtx.remove) and every change to a blob record through
// setBlob, so they change in the same transaction as what they describe.

// setBlob writes blob h's record b over old (had: the record existed),
// keeping the lru index and the stored counters in step.
func (w *wtx) setBlob(h hash, old blobRecord, had bool, b blobRecord) error {
	oldLive, newLive := had && old.Refs > 0, b.Refs > 0
	switch {
	case newLive && !oldLive:
		w.c.Stored += b.Size
		w.c.Blobs++
	case oldLive && !newLive:
		w.c.Stored -= old.Size
		w.c.Blobs--
	}
	if had && old.heldOnly() {
		w.c.Held -= old.Size
	}
	if b.heldOnly() {
		w.c.Held += b.Size
	}
	var oldIdx, newIdx []byte
	if had {
		oldIdx = old.lruBucket()
	}
	newIdx = b.lruBucket()
	moved := !bytes.Equal(oldIdx, newIdx) || old.Use != b.Use
	if oldIdx != nil && moved {
		if err := w.tx.Bucket(oldIdx).Delete(lruKey(old.Use, h)); err != nil {
			return err
		}
	}
	if newIdx != nil && moved {
		if err := w.tx.Bucket(newIdx).Put(lruKey(b.Use, h), nil); err != nil {
			return err
		}
		if bytes.Equal(newIdx, bucketLRU) {
			w.enteredLRU(lruKey(b.Use, h))
		}
	}
	return w.blobs.Put(h[:], b.encode())
}

// touch records a use of blob h now (a write), so it is the most recently
// used.
func (w *wtx) touch(h hash) error {
	return w.used(h, w.s.uses.next())
}

// used sets blob h's last use to seq unless it is gone or already later.
func (w *wtx) used(h hash, seq uint64) error {
	b, ok, err := getBlob(w.blobs, h)
	if err != nil || !ok || b.Refs == 0 || b.Use >= seq {
		return err
	}
	next := b
	next.Use = seq
	return w.setBlob(h, b, true, next)
}

// addPins adds d to the pinned references of the blob with hex hash sum.
func (w *wtx) addPins(sum string, d int) error {
	h, err := w.s.sealer.blobKey(sum)
	if err != nil {
		return err
	}
	b, ok, err := getBlob(w.blobs, h)
	if err != nil {
		return err
	}
	if !ok || (d < 0 && b.Pins == 0) {
		return fmt.Errorf("corrupt store: blob %s has no pinned reference to drop", sum)
	}
	next := b
	next.Pins = uint64(int64(b.Pins) + int64(d))
	return w.setBlob(h, b, true, next)
}

// index updates the counters and the refs, expiry and pin bookkeeping for
// the entry at p changing from old to r (either nil: absent). The blob
// reference counts themselves are the caller's (ref, Unref).
func (w *wtx) index(p string, old, r *record) error {
	w.c.Add(old, -1)
	w.c.Add(r, 1)
	w.s.quota.Charge(w.charges, p, quota.Entry(r)-quota.Entry(old))
	oldSum, newSum := entryrec.PresentSum(old), entryrec.PresentSum(r)
	if oldSum != newSum {
		if oldSum != "" {
			if err := w.setRef(oldSum, p, false); err != nil {
				return err
			}
		}
		if newSum != "" {
			if err := w.setRef(newSum, p, true); err != nil {
				return err
			}
		}
	}
	oldPin, newPin := entryrec.PinnedSum(old), entryrec.PinnedSum(r)
	if oldPin != newPin {
		if oldPin != "" {
			if err := w.addPins(oldPin, -1); err != nil {
				return err
			}
		}
		if newPin != "" {
			if err := w.addPins(newPin, 1); err != nil {
				return err
			}
		}
	}
	oldExp, newExp := entryrec.Expires(old), entryrec.Expires(r)
	if !oldExp.Equal(newExp) {
		if !oldExp.IsZero() {
			if err := w.expiry.Delete(expiryKey(oldExp, p)); err != nil {
				return err
			}
		}
		if !newExp.IsZero() {
			if err := w.expiry.Put(expiryKey(newExp, p), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// setRef adds or deletes the refs key saying the file at p uses sum.
func (w *wtx) setRef(sum, p string, on bool) error {
	h, err := w.s.sealer.blobKey(sum)
	if err != nil {
		return err
	}
	if on {
		return w.refs.Put(refKey(h, p), nil)
	}
	return w.refs.Delete(refKey(h, p))
}
