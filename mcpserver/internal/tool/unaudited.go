package tool

import (
	"sync"
	"sync/atomic"

	"github.com/depotfs/depotfs/internal/audit"
)

// maxUnaudited bounds the records of committed calls kept for a later
// append. Once the log fails, calls are refused before they touch the
// store, so only the calls already past that check (at most the calls in
// flight) can add one.
const maxUnaudited = 1024

// unaudited holds the records of calls that committed a change while the
// audit log could not take their record, oldest first: the next append
// writes them before its own, so the log ends up complete, in the order
// of the appends. It is safe for concurrent use.
type unaudited struct {
	any  atomic.Bool // fast path: most appends find nothing held
	mu   sync.Mutex
	recs []*audit.Record
}

// append writes r to a, after the records held; when r cannot be written
// and keep is set (its call committed a change), r is held instead of
// lost. It returns r's error.
func (u *unaudited) append(a Auditor, r *audit.Record, keep bool) error {
	err := u.flush(a)
	if err == nil {
		err = a.Append(r)
	}
	if err != nil && keep {
		u.hold(r)
	}
	return err
}

// flush writes the records held, stopping at the first failure.
func (u *unaudited) flush(a Auditor) error {
	if !u.any.Load() {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for len(u.recs) > 0 {
		if err := a.Append(u.recs[0]); err != nil {
			return err
		}
		u.recs = u.recs[1:]
	}
	u.any.Store(false)
	return nil
}

func (u *unaudited) hold(r *audit.Record) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.recs) < maxUnaudited {
		u.recs = append(u.recs, r)
	}
	u.any.Store(true)
}
