package bolt

import (
	"context"
	"fmt"
	"sync"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/quota"
	"github.com/depotfs/depotfs/store/internal/rules"
	bbolt "go.etcd.io/bbolt"
)

// charged is what the prefixes of Options.Quotas are charged as
// committed. Write transactions change it after their commit, under
// Store.wmu, so one sees it unchanged from begin to commit; mu guards it
// for Stats, which reads it without wmu.
type charged struct {
	mu sync.Mutex
	c  quota.Charges
}

// load counts what q's prefixes are charged: one pass over the tree, the
// versions and the uploads in progress (nothing without quotas).
func (c *charged) load(tx *bbolt.Tx, q *quota.Set, sl sealer) error {
	sum := q.Zero()
	if q == nil {
		return nil
	}
	err := tx.Bucket(bucketTree).ForEach(func(k, v []byte) error {
		r, err := decodeRecord(v, sl)
		if err != nil {
			return fmt.Errorf("tree %q: %w", keyPath(k), err)
		}
		q.Charge(sum, keyPath(k), quota.Entry(r))
		return nil
	})
	if err != nil {
		return err
	}
	err = tx.Bucket(bucketVersions).ForEach(func(k, v []byte) error {
		ver, err := decodeVersion(k, v, sl)
		if err != nil {
			return err
		}
		q.Charge(sum, ver.Path, quota.Version(ver.Rec, ver.Held))
		return nil
	})
	if err != nil {
		return err
	}
	ups := tx.Bucket(bucketUploads)
	err = ups.ForEachBucket(func(k []byte) error {
		u, err := sl.readUpload(ups.Bucket(k), string(k))
		if err != nil {
			return fmt.Errorf("upload %q: %w", k, err)
		}
		if u.Result == nil {
			q.Charge(sum, u.File.Path, u.Bytes)
		}
		return nil
	})
	c.c = sum
	return err
}

// get returns a copy of the committed charges.
func (c *charged) get() quota.Charges {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(quota.Charges(nil), c.c...)
}

// add applies a committed transaction's change.
func (c *charged) add(d quota.Charges) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Add(d)
}

// chargeVersion charges (sign 1) or releases (-1) what version v, when
// not nil, charges its path.
func (w *wtx) chargeVersion(v *rules.Version, sign int64) {
	if v != nil {
		w.s.quota.Charge(w.charges, v.Path, sign*quota.Version(v.Rec, v.Held))
	}
}

// CheckQuota refuses the transaction's changes so far when they take a
// prefix over its quota (see quota.Set.Check).
func (w *wtx) CheckQuota() error { return w.s.quota.Check(w.s.charged.get(), w.charges) }

var _ store.Quotas = (*Store)(nil)

// Quotas returns the quotas with what each prefix is charged (see
// store.Quotas).
func (s *Store) Quotas(ctx context.Context) ([]store.QuotaUse, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.quota.Uses(s.charged.get()), nil
}
