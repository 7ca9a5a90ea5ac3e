package rules

import (
	"fmt"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/evictplan"
)

// Evict drops content sum, of size bytes and refs references, for
// Txn.MakeRoom: each file among users (the paths that may use it, in
// order) that does becomes a placeholder, its other metadata kept, with
// an EventEvicted, and is recorded in ev; each of versions (those using
// it) is dropped from its path's history. They must account for every
// reference; a pinned file or a held version never uses evictable
// content. The caller has made sure no snapshot holds a user (Holds).
func Evict(t Txn, sum string, size int64, refs uint64, users []string, versions []Version, ev *store.Evictions) error {
	n := uint64(0)
	for _, v := range versions {
		if v.Held || entryrec.PresentSum(v.Rec) != sum {
			return fmt.Errorf("corrupt store: version %s@%d does not use evictable content %s", v.Path, v.Rec.Revision, sum)
		}
		if err := drop(t, v); err != nil {
			return err
		}
		n++
	}
	for _, p := range users {
		r, err := t.Get(p)
		if err != nil {
			return err
		}
		if entryrec.PresentSum(r) != sum {
			continue
		}
		if r.Pinned {
			return fmt.Errorf("corrupt store: pinned %s uses evictable content %s", p, sum)
		}
		next := *r
		next.Present, next.SHA256, next.Updated = false, "", t.Now()
		if _, err := t.Put(store.EventEvicted, p, next); err != nil {
			return err
		}
		if err := t.Unref(sum); err != nil {
			return err
		}
		n++
		evictplan.Evicted(ev, p)
	}
	if n != refs {
		return fmt.Errorf("corrupt store: content %s has %d references, %d files use it", sum, refs, n)
	}
	ev.Bytes += size
	return nil
}
