package nats

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/quota"
)

var _ store.Quotas = (*Store)(nil)

// Quotas returns the quotas with what each prefix is charged as this
// host has applied the records (see store.Quotas).
func (s *Store) Quotas(ctx context.Context) ([]store.QuotaUse, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	return s.view.st.quota.Uses(s.view.st.charged), nil
}

// CheckQuota refuses the transaction's changes so far when they take a
// prefix over its quota (see quota.Set.Check). What they change is
// counted over the transaction's own records against the state it
// started from: bounded by the size of the change, never the tree's. Two
// hosts checking at once may each let one write through.
func (t *txn) CheckQuota() error {
	q := t.st.quota
	if q == nil {
		return nil
	}
	d := q.Zero()
	for p, r := range t.entries {
		q.Charge(d, p, quota.Entry(r.rec())-quota.Entry(t.st.entries[p].rec()))
	}
	for k, v := range t.vers.m {
		if old := t.st.vkeys[k]; old != nil {
			q.Charge(d, old.Path, -quota.Version(old.Rec, old.Held))
		}
		if v != nil {
			q.Charge(d, v.Path, quota.Version(v.Rec, v.Held))
		}
	}
	for k, u := range t.uploads.m {
		if old := t.st.uploads[k]; old != nil && old.Result == nil {
			q.Charge(d, old.File.Path, -old.Bytes)
		}
		if u != nil && u.Result == nil && u.done == nil {
			q.Charge(d, u.File.Path, u.Bytes)
		}
	}
	return q.Check(t.st.charged, d)
}
