package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

// TestGroupCommitFailures runs writes that fail after changing their
// transaction (a write that cannot make room once its content is staged)
// concurrently with writes that succeed, so they share transactions: each
// failed write must leave nothing behind and each successful one must be
// committed whole.
func TestGroupCommitFailures(t *testing.T) {
	const limit = 64 << 10
	s, _ := openTemp(t, &bolt.Options{MaxStoreBytes: limit})
	ctx := context.Background()
	if _, err := s.Put(ctx, store.PutRequest{Path: "/pinned", Data: bytes.Repeat([]byte("p"), limit-8<<10), Pinned: true}); err != nil {
		t.Fatal(err)
	}
	const writers, rounds = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				p := fmt.Sprintf("/w%d/f%d", g, i)
				if g%2 == 1 {
					_, err := s.Put(ctx, store.PutRequest{Path: p, Data: bytes.Repeat([]byte{byte(i)}, 16<<10), Pinned: true})
					if !errors.Is(err, store.ErrLimit) {
						errs <- fmt.Errorf("%s: %v, want ErrLimit", p, err)
					}
					continue
				}
				if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: []byte(p), Pinned: true}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for g := range writers {
		for i := range rounds {
			p := fmt.Sprintf("/w%d/f%d", g, i)
			e, err := s.Stat(ctx, p)
			switch {
			case g%2 == 1 && !errors.Is(err, store.ErrNotExist):
				t.Errorf("%s: failed write left %+v, %v", p, e, err)
			case g%2 == 0 && (err != nil || e.SHA256 != storetest.Sum([]byte(p))):
				t.Errorf("%s: acknowledged write reads %+v, %v", p, e, err)
			}
		}
		if _, err := s.Stat(ctx, fmt.Sprintf("/w%d", g)); g%2 == 1 && !errors.Is(err, store.ErrNotExist) {
			t.Errorf("/w%d: the parent of failed writes exists: %v", g, err)
		}
	}
	if err := bolt.Verify(s); err != nil {
		t.Error(err)
	}
}

// TestGroupCommitCancelled checks that a write whose context is done when
// its turn comes is not applied and reports the context's error.
func TestGroupCommitCancelled(t *testing.T) {
	s, _ := openTemp(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Put(ctx, store.PutRequest{Path: "/f", Data: []byte("x")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context: %v", err)
	}
	if _, err := s.Stat(context.Background(), "/f"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat after the cancelled Put: %v", err)
	}
}
