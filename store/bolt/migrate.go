package bolt

import (
	"bytes"
	"slices"
	"time"

	"github.com/depotfs/depotfs/store/internal/entryrec"
	bbolt "go.etcd.io/bbolt"
)

// derived is what the counters and the index buckets should hold,
// computed from the tree and the blobs alone.
type derived struct {
	c      counters        // entry and blob counters; the cumulative ones are 0
	refs   map[string]bool // refs keys
	expiry map[string]bool // expiry keys
	pins   map[hash]uint64 // pinned present files and held versions per blob
	vers   map[hash]uint64 // retained versions per blob
	last   map[hash]time.Time
}

// derive computes what the counters and indexes should be in tx.
func derive(tx *bbolt.Tx, c sealer) (*derived, error) {
	d := &derived{refs: map[string]bool{}, expiry: map[string]bool{}, pins: map[hash]uint64{}, vers: map[hash]uint64{}, last: map[hash]time.Time{}}
	err := tx.Bucket(bucketTree).ForEach(func(k, v []byte) error {
		r, err := decodeRecord(v, c)
		if err != nil {
			return err
		}
		p := keyPath(k)
		d.c.Add(r, 1)
		if sum := entryrec.PresentSum(r); sum != "" {
			h, err := parseHash(sum)
			if err != nil {
				return err
			}
			h = c.address(h)
			d.refs[string(refKey(h, p))] = true
			if r.Pinned {
				d.pins[h]++
			}
			if r.Updated.After(d.last[h]) {
				d.last[h] = r.Updated
			}
		}
		if t := entryrec.Expires(r); !t.IsZero() {
			d.expiry[string(expiryKey(t, p))] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := d.versions(tx, c); err != nil {
		return nil, err
	}
	blobs := tx.Bucket(bucketBlobs)
	err = blobs.ForEach(func(k, _ []byte) error {
		var h hash
		copy(h[:], k)
		b, _, err := getBlob(blobs, h)
		if err == nil && b.Refs > 0 {
			d.c.Stored += b.Size
			d.c.Blobs++
			if b.Refs == d.vers[h] {
				d.c.Held += b.Size
			}
		}
		return err
	})
	return d, err
}

// versions derives what the retained versions and the snapshots add.
func (d *derived) versions(tx *bbolt.Tx, c sealer) error {
	d.c.Snapshots = int64(tx.Bucket(bucketSnapshots).Stats().KeyN)
	return tx.Bucket(bucketVersions).ForEach(func(k, v []byte) error {
		ver, err := decodeVersion(k, v, c)
		if err != nil {
			return err
		}
		d.c.Versions++
		if sum := entryrec.PresentSum(ver.Rec); sum != "" {
			h, err := parseHash(sum)
			if err != nil {
				return err
			}
			h = c.address(h)
			d.refs[string(versionRef(h, ver.Path, ver.Rec.Revision))] = true
			d.vers[h]++
			if ver.Held {
				d.pins[h]++
			}
		}
		return nil
	})
}

// migrate upgrades a schema 1 file: it derives the counters, the refs and
// expiry indexes and the pin counts, rewrites the blob records in the
// current format, and orders the lru index by when each blob's files were
// last updated, the best guess at their last use.
func migrate(tx *bbolt.Tx) error {
	d, err := derive(tx, sealer{})
	if err != nil {
		return err
	}
	for _, name := range [][]byte{bucketRefs, bucketExpiry, bucketLRU} {
		if err := tx.DeleteBucket(name); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	refs, expiry := tx.Bucket(bucketRefs), tx.Bucket(bucketExpiry)
	for k := range d.refs {
		if err := refs.Put([]byte(k), nil); err != nil {
			return err
		}
	}
	for k := range d.expiry {
		if err := expiry.Put([]byte(k), nil); err != nil {
			return err
		}
	}
	type blob struct {
		h hash
		b blobRecord
	}
	var all []blob
	blobs := tx.Bucket(bucketBlobs)
	err = blobs.ForEach(func(k, _ []byte) error {
		var h hash
		copy(h[:], k)
		b, _, err := getBlob(blobs, h)
		all = append(all, blob{h, b})
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(x, y blob) int {
		if c := d.last[x.h].Compare(d.last[y.h]); c != 0 {
			return c
		}
		return bytes.Compare(x.h[:], y.h[:])
	})
	for i := range all {
		b := &all[i].b
		b.Pins = d.pins[all[i].h]
		b.Use = uint64(i + 1)
		d.c.UseSeq = int64(i + 1)
		if err := blobs.Put(all[i].h[:], b.encode()); err != nil {
			return err
		}
		if idx := b.lruBucket(); idx != nil {
			if err := tx.Bucket(idx).Put(lruKey(b.Use, all[i].h), nil); err != nil {
				return err
			}
		}
	}
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(keyCounters, d.c.encode()); err != nil {
		return err
	}
	return meta.Put(keySchema, u64bytes(schemaVersion))
}
