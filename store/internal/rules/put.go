package rules

import (
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// Written is the outcome of a whole-file write; Result is final once the
// transaction has committed.
type Written struct {
	status  store.PutStatus
	at      Entry
	evicted store.Evictions
}

// Result is the store's answer to the write.
func (w *Written) Result() store.PutResult {
	return store.PutResult{Status: w.status, Entry: w.at.Entry(), Evicted: w.evicted}
}

// Superseded gives each result of res whose path a later request of the
// same batch wrote again the entry the batch left at that path, keeping
// its own Status and Evicted. Every reader sees a batch whole, so the
// earlier request's record was never the tree at any revision and is no
// version: a revision of its own would name nothing a read or an
// if_revision could find.
func Superseded(res []store.PutResult) {
	last := map[string]int{}
	for i := len(res) - 1; i >= 0; i-- {
		p := res[i].Entry.Path
		if j, ok := last[p]; ok {
			res[i].Entry = res[j].Entry
			continue
		}
		last[p] = i
	}
}

// One is a call's answer for one file from its batch of one: a refused
// batch's *store.BatchError wraps the error the call returns.
func One(res []store.PutResult, err error) (store.PutResult, error) {
	if be, ok := err.(*store.BatchError); ok {
		err = be.Err
	}
	if err != nil {
		return store.PutResult{}, err
	}
	return res[0], nil
}

// Put makes req.Path a present file with content sum of size bytes,
// applying req's conditions and metadata (see entryrec.Put): the missing
// parents are created, the content referenced (Txn.Ref stores what the
// store does not hold) and used, the replaced content released, and when
// the stored content grew, the least recently used content evicted until
// the store fits its limit. Writing the content a file already has only
// changes its metadata, if that differs. The request's path and declared
// hash are checked (check.Limits.Put) before.
func Put(t Txn, req store.PutRequest, sum string, size int64) (*Written, error) {
	p := req.Path
	if err := t.Limits().Size(size); err != nil {
		return nil, err
	}
	stored := t.Stored()
	if err := CheckParents(t, p); err != nil {
		return nil, err
	}
	r, err := t.Get(p)
	if err != nil {
		return nil, err
	}
	if err := entryrec.CheckWrite(r, req.IfAbsent, req.IfRevision); err != nil {
		return nil, err
	}
	if err := parents(t, p, true); err != nil {
		return nil, err
	}
	now := t.Now()
	next, status, kind := entryrec.Put(r, req, sum, size, now)
	if status != store.StatusUnchanged {
		if err := t.Ref(sum, size); err != nil {
			return nil, err
		}
		if status == store.StatusUpdated {
			if err := t.Unref(r.SHA256); err != nil {
				return nil, err
			}
		}
	}
	if err := t.Use(sum); err != nil {
		return nil, err
	}
	if status == store.StatusUnchanged && entryrec.SameMeta(r, &next) {
		return &Written{status: status, at: Entry{p, r}}, nil
	}
	next.Updated = now
	kept, err := write(t, kind, p, r, next)
	if err != nil {
		return nil, err
	}
	out := &Written{status: status, at: Entry{p, kept}}
	// The quota first: a write over its prefix's quota must not evict
	// anyone's content before it is refused.
	if err := t.CheckQuota(); err != nil {
		return nil, err
	}
	if t.Stored() > stored {
		if out.evicted, err = t.MakeRoom(sum); err != nil {
			return nil, err
		}
	}
	return out, nil
}
