package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
	bbolt "go.etcd.io/bbolt"
)

// Stats returns the store's counts, sizes, cumulative counters and limits:
// the counters as of the last commit (kept exact by every write
// transaction), Hits and Misses as counted in memory, and Uploads and
// UploadBytes for the uploads in progress, whose chunks do not count as
// stored content but do count against MaxStoreBytes (see PutChunk). It reads one small record, so it is cheap
// enough to call on every request. It is safe for concurrent use.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := s.check(ctx); err != nil {
		return store.Stats{}, err
	}
	var c counters
	var dirTimes int64
	err := s.db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketDirTimes); b != nil {
			// A walk of the index: it holds a few keys per snapshot.
			dirTimes = int64(b.Stats().KeyN)
		}
		var err error
		c, err = loadCounters(tx.Bucket(bucketMeta))
		return err
	})
	if err != nil {
		return store.Stats{}, dbErr(err)
	}
	return store.Stats{
		Files:         c.Files,
		Placeholders:  c.Placeholders,
		Dirs:          c.Dirs,
		StoredBytes:   c.Stored,
		LogicalBytes:  c.Logical,
		Blobs:         c.Blobs,
		Uploads:       s.staged.uploads.Load(),
		UploadBytes:   s.staged.bytes.Load(),
		Evictions:     c.Evictions,
		EvictedBytes:  c.EvictedBytes,
		Expiries:      c.Expiries,
		Hits:          s.uses.hits.Load(),
		Misses:        s.uses.misses.Load(),
		Versions:      c.Versions,
		HeldBytes:     c.Held,
		Snapshots:     c.Snapshots,
		DirTimes:      dirTimes,
		MaxStoreBytes: s.opts.MaxStoreBytes,
		MaxFileBytes:  s.opts.MaxFileBytes,
	}, nil
}
