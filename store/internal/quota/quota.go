// Package quota decides what a write charges to the configured quotas
// (store.Quota) and refuses one that would take a prefix over its quota.
// Both stores use it: each keeps what is charged as committed, changes it
// where it changes an entry, a version or an upload in progress (bounded
// work per change, never a walk of the tree), and counts it once at open.
// The package holds no state of its own beyond the configured quotas.
package quota

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// Set is the configured quotas, by prefix. A nil Set has none, charges
// nothing and refuses nothing. It is immutable and safe for concurrent
// use.
type Set struct {
	quotas []store.Quota
}

// New checks qs (clean prefixes, each once, at least 1 byte) and returns
// their Set; nil for none.
func New(qs []store.Quota) (*Set, error) {
	if len(qs) == 0 {
		return nil, nil
	}
	s := &Set{quotas: slices.Clone(qs)}
	slices.SortFunc(s.quotas, func(a, b store.Quota) int { return cmp.Compare(a.Prefix, b.Prefix) })
	for i, q := range s.quotas {
		if c, err := depotpath.Clean(q.Prefix); err != nil || c != q.Prefix {
			return nil, fmt.Errorf("quota %q: not a clean depot path", q.Prefix)
		}
		if q.Bytes < 1 {
			return nil, fmt.Errorf("quota %s: %d bytes, want at least 1", q.Prefix, q.Bytes)
		}
		if i > 0 && s.quotas[i-1].Prefix == q.Prefix {
			return nil, fmt.Errorf("quota %s: given twice", q.Prefix)
		}
	}
	return s, nil
}

// Charges are bytes charged per quota of a Set, in its order: what a
// store has committed, or what one transaction changes.
type Charges []int64

// Zero returns charges of nothing for every quota of s.
func (s *Set) Zero() Charges {
	if s == nil {
		return nil
	}
	return make(Charges, len(s.quotas))
}

// Charge adds n bytes (negative: releases) at path p to c, for every
// quota whose prefix holds p.
func (s *Set) Charge(c Charges, p string, n int64) {
	if s == nil || n == 0 {
		return
	}
	for i, q := range s.quotas {
		if depotpath.Within(p, q.Prefix) {
			c[i] += n
		}
	}
}

// Add adds d to c.
func (c Charges) Add(d Charges) {
	for i := range d {
		c[i] += d[i]
	}
}

// Check fails with a *store.QuotaError when d, a transaction's change to
// committed, adds bytes to a prefix and takes it over its quota (or adds
// to one already over it, after a quota was lowered). Releasing bytes is
// never refused.
func (s *Set) Check(committed, d Charges) error {
	if s == nil {
		return nil
	}
	for i, q := range s.quotas {
		if d[i] > 0 && committed[i]+d[i] > q.Bytes {
			return &store.QuotaError{Prefix: q.Prefix, Limit: q.Bytes, Charged: committed[i], Adding: d[i]}
		}
	}
	return nil
}

// Uses returns the quotas of s with what committed charges each.
func (s *Set) Uses(committed Charges) []store.QuotaUse {
	if s == nil {
		return nil
	}
	out := make([]store.QuotaUse, len(s.quotas))
	for i, q := range s.quotas {
		out[i] = store.QuotaUse{Prefix: q.Prefix, Limit: q.Bytes, Charged: committed[i]}
	}
	return out
}

// Entry is what the live record r charges: its size when its content is
// present, else nothing.
func Entry(r *entryrec.Record) int64 {
	if entryrec.PresentSum(r) == "" {
		return 0
	}
	return r.Size
}

// Version is what a retained version with record r charges: its size
// when a snapshot holds it (held) and its content is present, else
// nothing (history nothing holds is not charged; see store.Quota).
func Version(r *entryrec.Record, held bool) int64 {
	if !held {
		return 0
	}
	return Entry(r)
}
