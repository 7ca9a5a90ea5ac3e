package bolt

import (
	"fmt"
	"sync/atomic"

	bbolt "go.etcd.io/bbolt"
)

// staging is a count of uploads in progress and the bytes their received
// chunks hold, or a change to one.
type staging struct{ uploads, bytes int64 }

// stagedTotals is what all uploads in progress hold. It changes only after
// a commit, under Store.wmu; Stats reads it without locking.
type stagedTotals struct{ uploads, bytes atomic.Int64 }

// load counts the uploads in progress in the uploads bucket.
func (t *stagedTotals) load(ups *bbolt.Bucket, c sealer) error {
	var n staging
	err := ups.ForEachBucket(func(k []byte) error {
		u, err := c.readUpload(ups.Bucket(k), string(k))
		if err != nil {
			return fmt.Errorf("upload %q: %w", k, err)
		}
		if u.Result == nil {
			n.uploads++
			n.bytes += u.Bytes
		}
		return nil
	})
	t.uploads.Store(n.uploads)
	t.bytes.Store(n.bytes)
	return err
}

func (t *stagedTotals) apply(d staging) {
	t.uploads.Add(d.uploads)
	t.bytes.Add(d.bytes)
}

// dropUpload deletes the bucket of upload id, whose metadata is u,
// accounting for what it held.
func (w *wtx) dropUpload(id string, u *upload) error {
	if u.Result == nil {
		w.staged.uploads--
		w.staged.bytes -= u.Bytes
		w.s.quota.Charge(w.charges, u.File.Path, -u.Bytes)
	}
	return w.tx.Bucket(bucketUploads).DeleteBucket([]byte(id))
}
