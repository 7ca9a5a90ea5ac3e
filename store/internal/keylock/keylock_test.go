package keylock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store/internal/keylock"
)

func TestOneHolderPerKey(t *testing.T) {
	var l keylock.Locks
	ctx := context.Background()
	var mu sync.Mutex
	in := map[string]int{}
	var wg sync.WaitGroup
	for i := range 40 {
		key := []string{"a", "b"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Lock(ctx, key); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			in[key]++
			if in[key] != 1 {
				t.Errorf("%d holders of %s", in[key], key)
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			in[key]--
			mu.Unlock()
			l.Unlock(key)
		}()
	}
	wg.Wait()
}

func TestTryLockAndCancel(t *testing.T) {
	var l keylock.Locks
	if !l.TryLock("k") {
		t.Fatal("TryLock of a free key failed")
	}
	if l.TryLock("k") {
		t.Fatal("TryLock of a held key succeeded")
	}
	if !l.TryLock("other") {
		t.Fatal("TryLock of another key failed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Lock(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock of a held key with a done context: %v, want context.Canceled", err)
	}
	got := make(chan error, 1)
	go func() { got <- l.Lock(context.Background(), "k") }()
	l.Unlock("k")
	if err := <-got; err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	l.Unlock("k")
	l.Unlock("other")
}
