package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// testConcurrency runs writers and readers at once; under -race it also
// checks the implementation's locking. Every read must see one whole
// version of a file, never a mix.
func testConcurrency(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := withinDeadline(t)
	const writers, readers, rounds = 4, 4, 15
	// versions[i] is the content of version i of every file: readers can
	// tell a whole version from a mix.
	versions := make([][]byte, rounds)
	for i := range versions {
		versions[i] = pattern(20_000+i, byte(i))
	}
	valid := map[string]bool{}
	for _, v := range versions {
		valid[Sum(v)] = true
	}
	files := []string{"/shared/a", "/shared/b", "/shared/deep/c"}
	errs := make(chan error, writers+readers+1)
	watchCh, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				p := files[(w+i)%len(files)]
				if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: versions[i]}); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				if _, err := s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/own%d/f%d", w, i), Data: versions[i]}); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var readersWG sync.WaitGroup
	for r := range readers {
		readersWG.Go(func() {
			// Until the writers stop, and at most as many reads as
			// there are writes: readers that spin take the CPU the
			// writers need, and the writes only take longer.
			for i := range writers * rounds * 2 {
				select {
				case <-stop:
					return
				default:
				}
				if err := readOnce(ctx, s, files[(r+i)%len(files)], valid); err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				if _, err := s.ReadDir(ctx, "/shared"); err != nil && !errors.Is(err, store.ErrNotExist) {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
			}
		})
	}
	var watchErr error
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		var last uint64
		for ev := range watchCh {
			if ev.Revision <= last && watchErr == nil {
				watchErr = fmt.Errorf("watch: revision %d after %d", ev.Revision, last)
			}
			last = ev.Revision
		}
	}()
	wg.Wait()
	close(stop)
	readersWG.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, p := range files {
		if got := read(t, s, p); !valid[Sum(got)] {
			t.Errorf("%s holds bytes no writer wrote", p)
		}
	}
	for w := range writers {
		for i := range rounds {
			if got := read(t, s, fmt.Sprintf("/own%d/f%d", w, i)); !bytes.Equal(got, versions[i]) {
				t.Errorf("/own%d/f%d reads wrong", w, i)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-watchDone
	if watchErr != nil {
		t.Error(watchErr)
	}
}

func readOnce(ctx context.Context, s store.Store, p string, valid map[string]bool) error {
	c, err := s.Open(ctx, p)
	if errors.Is(err, store.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer c.Close()
	b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
	if err != nil {
		return err
	}
	if Sum(b) != c.SHA256() || !valid[Sum(b)] {
		return fmt.Errorf("%s: read %d bytes that are not one whole version", p, len(b))
	}
	return nil
}

func testClose(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	put(t, s, "/f", []byte("x"))
	c, err := s.Open(t.Context(), "/f")
	if err != nil {
		t.Fatal(err)
	}
	ch := watch(t, s, "/", 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	WaitClosed(t, ch)
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ctx := t.Context()
	calls := map[string]error{}
	_, calls["Stat"] = s.Stat(ctx, "/f")
	_, calls["ReadDir"] = s.ReadDir(ctx, "/")
	_, calls["Open"] = s.Open(ctx, "/f")
	_, calls["Put"] = s.Put(ctx, store.PutRequest{Path: "/g", Data: []byte("y")})
	_, calls["PutChunk"] = s.PutChunk(ctx, store.Chunk{UploadID: "u", Count: 1, Data: []byte("y"), File: store.PutRequest{Path: "/g", SHA256: Sum([]byte("y"))}})
	_, calls["Declare"] = s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{{Path: "/g", Kind: store.KindDir}}})
	calls["Remove"] = s.Remove(ctx, store.RemoveRequest{Path: "/f"})
	_, calls["Revision"] = s.Revision(ctx)
	_, calls["Watch"] = s.Watch(ctx, "/", 0)
	_, calls["ReadAt"] = c.ReadAt(make([]byte, 1), 0)
	for name, err := range calls {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Errorf("closing a Content after its store: %v", err)
	}
}

// testConditionalWrites races writers whose every write is conditional on the
// revision they read: each condition must hold for at most one of them,
// however the store groups concurrent writes into transactions. A store
// that checks a later write's condition against the revision an earlier
// write in the same group replaced loses increments here.
func testConditionalWrites(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := withinDeadline(t)
	put(t, s, "/counter", []byte("0"))
	const writers, each = 8, 10
	errs := make(chan error, 2*writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				if err := increment(ctx, s, "/counter"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	// Removers that all hold the same revision: exactly one may succeed.
	e := put(t, s, "/once", []byte("x")).Entry
	var removed sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range writers {
		removed.Go(func() {
			err := s.Remove(ctx, store.RemoveRequest{Path: "/once", IfRevision: e.Revision})
			switch {
			case err == nil:
				mu.Lock()
				won++
				mu.Unlock()
			case !errors.Is(err, store.ErrRevision) && !errors.Is(err, store.ErrNotExist):
				errs <- fmt.Errorf("remove: %w", err)
			}
		})
	}
	wg.Wait()
	removed.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got, want := string(read(t, s, "/counter")), fmt.Sprint(writers*each); got != want {
		t.Errorf("counter %s after %s increments by compare-and-set", got, want)
	}
	if won != 1 {
		t.Errorf("%d removals conditional on one revision succeeded, want 1", won)
	}
}

// increment adds one to the decimal counter at p by compare-and-set,
// reading again whenever another writer got there first.
func increment(ctx context.Context, s store.Store, p string) error {
	for {
		c, err := s.Open(ctx, p)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
		c.Close()
		if err != nil {
			return err
		}
		e, err := s.Stat(ctx, p)
		if err != nil {
			return err
		}
		if Sum(b) != e.SHA256 {
			continue // changed between the read and the stat
		}
		var n int
		if _, err := fmt.Sscan(string(b), &n); err != nil {
			return fmt.Errorf("counter %q: %w", b, err)
		}
		_, err = s.Put(ctx, store.PutRequest{Path: p, Data: []byte(fmt.Sprint(n + 1)), IfRevision: e.Revision})
		if !errors.Is(err, store.ErrRevision) {
			return err
		}
	}
}
