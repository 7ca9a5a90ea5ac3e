package evictplan_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/evictplan"
)

// lru yields sizes as candidates named c0, c1, …, counting the calls.
func lru(sizes ...int64) (func() (string, int64, bool, error), *int) {
	calls := 0
	return func() (string, int64, bool, error) {
		if calls >= len(sizes) {
			return "", 0, false, nil
		}
		calls++
		return fmt.Sprint("c", calls-1), sizes[calls-1], true, nil
	}, &calls
}

func TestMakeRoom(t *testing.T) {
	var evicted []string
	evict := func(k string, ev *store.Evictions) error {
		evicted = append(evicted, k)
		evictplan.Evicted(ev, "/"+k)
		ev.Bytes += 1
		return nil
	}
	next, calls := lru(3, 4, 5)
	ev, err := evictplan.MakeRoom(10, 2, 6, next, evict) // 6 bytes over
	if err != nil || fmt.Sprint(evicted) != "[c0 c1]" || *calls != 2 || ev.Count != 2 || len(ev.Paths) != 2 {
		t.Fatalf("evicted %v after %d candidates: %+v, %v", evicted, *calls, ev, err)
	}

	evicted = nil
	next, calls = lru(3)
	if ev, err := evictplan.MakeRoom(6, 0, 6, next, evict); err != nil || ev.Count != 0 || *calls != 0 {
		t.Fatalf("within the limit: %+v, %v, %d candidates read", ev, err, *calls)
	}
	if ev, err := evictplan.MakeRoom(60, 0, 0, next, evict); err != nil || ev.Count != 0 {
		t.Fatalf("no limit: %+v, %v", ev, err)
	}
	next, _ = lru(1, 2)
	if _, err := evictplan.MakeRoom(10, 0, 6, next, evict); !errors.Is(err, store.ErrLimit) || evicted != nil {
		t.Fatalf("not enough evictable: %v, evicted %v", err, evicted)
	}
	broken := errors.New("broken index")
	failing := func() (string, int64, bool, error) { return "", 0, false, broken }
	if _, err := evictplan.MakeRoom(10, 0, 6, failing, evict); !errors.Is(err, broken) {
		t.Fatalf("candidate error: %v", err)
	}
}

func TestEvictedPathsBounded(t *testing.T) {
	var ev store.Evictions
	for i := range store.MaxEvictedPaths + 3 {
		evictplan.Evicted(&ev, fmt.Sprint("/", i))
	}
	if ev.Count != store.MaxEvictedPaths+3 || len(ev.Paths) != store.MaxEvictedPaths {
		t.Fatalf("count %d, %d paths", ev.Count, len(ev.Paths))
	}
}
