package store

import (
	"context"
	"fmt"
	"strings"
)

// Quota bounds the stored bytes charged to a prefix. What is charged is
// decided by path, never by writer: the logical size of every present
// file at or below Prefix (pinned ones included), of every version below
// it that a snapshot holds, and the bytes received by the uploads in
// progress whose destination is below it. Each reference counts whole
// (deduplication is a storage detail, not a discount). History versions
// nothing holds are not charged: they are the first content eviction
// takes, and a tenant has no way to drop them itself. A plain value.
type Quota struct {
	Prefix string // a clean depot path
	Bytes  int64  // the most Prefix may be charged; at least 1
}

// Quotas is implemented by a store that keeps quotas (both of depotfs's
// stores do).
type Quotas interface {
	// Quotas returns the configured quotas, by prefix, with what each is
	// charged as of the last commit; none when none is configured. It is
	// safe for concurrent use.
	Quotas(ctx context.Context) ([]QuotaUse, error)
}

// QuotaUse is what a quota's prefix is charged now. A plain value.
type QuotaUse struct {
	Prefix  string `json:"prefix"`
	Limit   int64  `json:"limit"`
	Charged int64  `json:"charged"`
}

// QuotaError reports a write refused because it would take Prefix over
// its quota; nothing was changed. It wraps ErrLimit. It names only the
// prefix, which the write's own path lies in: what else is charged there
// is for the caller to list with the rights it has.
type QuotaError struct {
	Prefix  string
	Limit   int64
	Charged int64 // before the write
	Adding  int64 // what the write would add
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("over the quota of %s: it is charged %d bytes of %d, and the write would add %d",
		e.Prefix, e.Charged, e.Limit, e.Adding)
}

// Unwrap returns ErrLimit.
func (e *QuotaError) Unwrap() error { return ErrLimit }

// RoomError reports a write refused because the store is full and what
// else is stored may not be evicted. Held lists every snapshot, those
// that hold the most bytes first: a server shows each caller only those
// it may read; Error's text names the five holding the most, for the
// operator's logs. It wraps Err, a store.ErrLimit.
type RoomError struct {
	Err  error
	Held []SnapshotHold
}

// SnapshotHold is a snapshot and the bytes it holds, as a RoomError
// names it. A plain value.
type SnapshotHold struct {
	Name, Prefix string
	Bytes        int64
}

func (e *RoomError) Error() string {
	if len(e.Held) == 0 {
		return e.Err.Error()
	}
	const most = 5
	list := make([]string, 0, most)
	for _, h := range e.Held[:min(most, len(e.Held))] {
		list = append(list, fmt.Sprintf("%s (%d bytes)", h.Name, h.Bytes))
	}
	return fmt.Sprintf("%v; snapshots hold the rest: delete one of %s to make room", e.Err, strings.Join(list, ", "))
}

// Unwrap returns e.Err.
func (e *RoomError) Unwrap() error { return e.Err }
