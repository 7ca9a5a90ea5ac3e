// Package evictplan decides what a write evicts when the store is over
// MaxStoreBytes: how many bytes must go, which content in least recently
// used order, and the store.ErrLimit when what is evictable is not
// enough. Both stores use it; where the order comes from (bolt's lru
// index, nats's per-host use numbers) and how content is dropped are each
// store's.
package evictplan

import (
	"fmt"

	"github.com/depotfs/depotfs/store"
)

// MakeRoom frees room until stored content and the chunks of uploads in
// progress (staged) fit limit (0: no limit). next yields the evictable
// contents, least recently used first, with their sizes (ok false: no
// more); it is called only while more room is needed. When they free
// enough, evict is called for each, in that order, and MakeRoom returns
// what evict recorded; otherwise it evicts nothing and fails with
// store.ErrLimit.
func MakeRoom[K any](stored, staged, limit int64, next func() (key K, size int64, ok bool, err error), evict func(K, *store.Evictions) error) (store.Evictions, error) {
	need := stored + staged - limit
	if limit == 0 || need <= 0 {
		return store.Evictions{}, nil
	}
	var victims []K
	freed := int64(0)
	for freed < need {
		k, size, ok, err := next()
		if err != nil {
			return store.Evictions{}, err
		}
		if !ok {
			break
		}
		victims = append(victims, k)
		freed += size
	}
	if freed < need {
		return store.Evictions{}, fmt.Errorf("%w: the write needs %d more bytes than the store size limit of %d allows, and only %d bytes are evictable (the rest is pinned or just written)",
			store.ErrLimit, need, limit, freed)
	}
	var ev store.Evictions
	for _, k := range victims {
		if err := evict(k, &ev); err != nil {
			return store.Evictions{}, err
		}
	}
	return ev, nil
}

// Evicted records in ev that the file at p became a placeholder.
func Evicted(ev *store.Evictions, p string) {
	ev.Count++
	if len(ev.Paths) < store.MaxEvictedPaths {
		ev.Paths = append(ev.Paths, p)
	}
}
