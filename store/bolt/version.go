package bolt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/rules"
	bbolt "go.etcd.io/bbolt"
)

// A version's value: the revision that replaced it, its flags, then the
// record as the tree bucket encodes it (revision included).
const (
	versionHead = 9
	flagHeld    = 1
)

func encodeVersion(v rules.Version, c sealer) ([]byte, error) {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 96), v.Until)
	var flags byte
	if v.Held {
		flags |= flagHeld
	}
	rec, err := encodeRecord(v.Rec, c)
	return append(append(b, flags), rec...), err
}

// decodeVersion decodes the version at key k.
func decodeVersion(k, v []byte, c sealer) (rules.Version, error) {
	if len(v) < versionHead || len(k) < 9 {
		return rules.Version{}, errCorrupt
	}
	r, err := decodeRecord(v[versionHead:], c)
	return rules.Version{Path: keyPath(k[:len(k)-9]), Rec: r, Until: u64(v[:8]), Held: v[8]&flagHeld != 0}, err
}

// versionUntil reads the revision that replaced the version with value v,
// without decoding its record.
func versionUntil(v []byte) uint64 {
	if len(v) < versionHead {
		return 0
	}
	return u64(v[:8])
}

// versionsOf returns p's versions in vb, newest first.
func versionsOf(vb *bbolt.Bucket, p string, sl sealer) ([]rules.Version, error) {
	prefix := append(treeKey(p), 0)
	var out []rules.Version
	c := vb.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, v = c.Next() {
		ver, err := decodeVersion(k, v, sl)
		if err != nil {
			return nil, err
		}
		out = append(out, ver)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// Versions returns p's retained versions, newest first.
func (w *wtx) Versions(p string) ([]rules.Version, error) {
	return versionsOf(w.versions, p, w.s.sealer)
}

// HeldWithin returns the held versions of dir and the paths below it.
func (w *wtx) HeldWithin(dir string) ([]rules.Version, error) {
	var out []rules.Version
	err := scanWithin(w.versions, dir, func(k, v []byte) error {
		if len(v) < versionHead || v[8]&flagHeld == 0 {
			return nil
		}
		ver, err := decodeVersion(k, v, w.s.sealer)
		out = append(out, ver)
		return err
	})
	return out, err
}

// scanWithin calls fn for the keys of the versions of dir and of every
// path below it.
func scanWithin(b *bbolt.Bucket, dir string, fn func(k, v []byte) error) error {
	prefixes := [][]byte{[]byte(dir)} // the root: every key
	if dir != depotpath.Root {
		prefixes = [][]byte{append(treeKey(dir), 0), dirPrefix(dir), []byte(dir + "/")}
	}
	c := b.Cursor()
	for _, prefix := range prefixes {
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if err := fn(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetVersion writes version v; a new one is replaced at this
// transaction's latest revision, that of the change just made to its path.
func (w *wtx) SetVersion(v rules.Version) error {
	k := versionKey(v.Path, v.Rec.Revision)
	var old *rules.Version
	if ov := w.versions.Get(k); ov != nil {
		o, err := decodeVersion(k, ov, w.s.sealer)
		if err != nil {
			return err
		}
		old = &o
		v.Until = o.Until
	} else {
		v.Until = w.rev
		w.c.Versions++
	}
	if err := w.indexVersion(old, &v); err != nil {
		return err
	}
	b, err := encodeVersion(v, w.s.sealer)
	if err != nil {
		return err
	}
	return w.versions.Put(k, b)
}

// DropVersion deletes version v.
func (w *wtx) DropVersion(v rules.Version) error {
	w.c.Versions--
	if err := w.indexVersion(&v, nil); err != nil {
		return err
	}
	return w.versions.Delete(versionKey(v.Path, v.Rec.Revision))
}

// indexVersion keeps the refs index and the blob's version and pin
// counts in step with a version changing from old to v (either nil:
// absent).
func (w *wtx) indexVersion(old, v *rules.Version) error {
	w.chargeVersion(old, -1)
	w.chargeVersion(v, 1)
	for i, ver := range []*rules.Version{old, v} {
		if ver == nil {
			continue
		}
		sum := entryrec.PresentSum(ver.Rec)
		if sum == "" {
			continue
		}
		h, err := w.s.sealer.blobKey(sum)
		if err != nil {
			return err
		}
		sign := uint64(1)
		k := versionRef(h, ver.Path, ver.Rec.Revision)
		if i == 0 {
			sign = ^uint64(0) // -1
			err = w.refs.Delete(k)
		} else {
			err = w.refs.Put(k, nil)
		}
		if err != nil {
			return err
		}
		b, ok, err := getBlob(w.blobs, h)
		if err != nil || !ok {
			return cmp.Or(err, fmt.Errorf("corrupt store: version %s@%d uses missing content %s", ver.Path, ver.Rec.Revision, sum))
		}
		next := b
		next.Versions += sign
		if ver.Held {
			next.Pins += sign
		}
		if err := w.setBlob(h, b, true, next); err != nil {
			return err
		}
	}
	return nil
}

// Snapshots reads the snapshots bucket, by name, once per transaction:
// every write asks.
func (w *wtx) Snapshots() ([]store.Snapshot, error) {
	if w.snaps == nil {
		snaps, err := readSnapshots(w.tx)
		if err != nil {
			return nil, err
		}
		w.snaps = &snaps
	}
	return *w.snaps, nil
}

func readSnapshots(tx *bbolt.Tx) ([]store.Snapshot, error) {
	var out []store.Snapshot
	err := tx.Bucket(bucketSnapshots).ForEach(func(k, v []byte) error {
		var s store.Snapshot
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("corrupt snapshot %q: %w", k, err)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// SetSnapshot writes or deletes a snapshot record.
func (w *wtx) SetSnapshot(name string, s *store.Snapshot) error {
	w.snaps = nil
	b := w.tx.Bucket(bucketSnapshots)
	had := b.Get([]byte(name)) != nil
	if s == nil {
		if had {
			w.c.Snapshots--
		}
		return b.Delete([]byte(name))
	}
	if !had {
		w.c.Snapshots++
	}
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := b.Put([]byte(name), v); err != nil {
		return err
	}
	if !had {
		return w.holdAll(*s)
	}
	return nil
}

// Revision is the revision of the last change, this transaction's
// included.
func (w *wtx) Revision() uint64 { return w.rev }

// Replaced is empty: Revision counts the transaction's changes, so a
// snapshot created in it sees them.
func (w *wtx) Replaced() ([]rules.Entry, error) { return nil, nil }

// Fresh reports whether r was written by the running call: after the
// revision the transaction had when that call started (see tryCommit).
func (w *wtx) Fresh(r *entryrec.Record) bool { return r.Revision > w.callRev }
