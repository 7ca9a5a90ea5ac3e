package vfs_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// retryStore plays, around one path of a bolt store, the interleaving in
// which the kernel's retry of an open that failed with ESTALE fails again:
// the program's lookup answers a version (v1) and an update (v2) lands
// before its open; the kernel is told of v2 while that open runs, so the
// open fails with ESTALE and the kernel forgets the old node; the retry's
// fresh lookup answers v2, and another update (v3) lands before the
// retry's open. It holds the store's events back (the kernel is not told
// of v2) until the first open asks for the content. Without Versions
// (it embeds store.Store only), no older version is retained: an open
// reads the node's version only from what the node holds.
type retryStore struct {
	store.Store
	waitApplied func(context.Context, uint64) error

	mu     sync.Mutex
	path   string
	step   int // 0: idle; 1-4: the interleaving's steps (see Stat, Open)
	next   [2][]byte
	held   bool          // events are held back
	resume chan struct{} // closed when events flow again
	v2     uint64        // v2's revision
	err    error         // the first failure of the script
}

// arm starts the interleaving for p: v2 and v3 are the versions to write.
func (s *retryStore) arm(p string, v2, v3 []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.path, s.step, s.next = p, 1, [2][]byte{v2, v3}
	s.held, s.resume = true, make(chan struct{})
}

func (s *retryStore) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// Stat writes v2 right after the program's lookup (step 1), lets the
// failed open's own Stat pass (step 3), and writes v3 right after the
// retry's lookup (step 4).
func (s *retryStore) Stat(ctx context.Context, p string) (store.Entry, error) {
	e, err := s.Store.Stat(ctx, p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p != s.path {
		return e, err
	}
	switch s.step {
	case 1, 4:
		data := s.next[0]
		if s.step == 4 {
			data = s.next[1]
		}
		res, perr := s.Store.Put(ctx, store.PutRequest{Path: p, Data: data})
		if perr != nil {
			s.fail(fmt.Errorf("put during lookup: %w", perr))
		}
		if s.step == 1 {
			s.v2, s.step = res.Entry.Revision, 2
		} else {
			s.step = 0
		}
	case 3:
		s.step = 4
	}
	return e, err
}

// Open, for the program's first open (step 2), lets the events flow and
// waits until the kernel is told of v2, as happens when the invalidator
// applies an update while an open is on its way.
func (s *retryStore) Open(ctx context.Context, p string) (store.Content, error) {
	s.mu.Lock()
	if p == s.path && s.step == 2 {
		s.step, s.held = 3, false
		close(s.resume)
		rev := s.v2
		s.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.waitApplied(wctx, rev)
		cancel()
		s.mu.Lock()
		if err != nil {
			s.fail(fmt.Errorf("waiting for v2 to be applied: %w", err))
		}
	}
	s.mu.Unlock()
	return s.Store.Open(ctx, p)
}

// Watch passes the store's events on, holding them while the script says.
func (s *retryStore) Watch(ctx context.Context, prefix string, since uint64) (<-chan store.Event, error) {
	in, err := s.Store.Watch(ctx, prefix, since)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event)
	go func() {
		defer close(out)
		for ev := range in {
			s.mu.Lock()
			held, resume := s.held, s.resume
			s.mu.Unlock()
			if held {
				select {
				case <-resume:
				case <-ctx.Done():
					return
				}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// TestCatNeverStaleDuringUpdates runs cat on files as they are updated
// twice around its open, in the interleaving retryStore plays: cat must
// print one whole version, never fail with "Stale file handle". The
// store's clock is an hour behind, so the files look at rest (a lookup of
// a file updated in the last lingerFor holds its version anyway), as on a
// loaded machine where updates come seconds apart.
func TestCatNeverStaleDuringUpdates(t *testing.T) {
	inner, _ := newStore(t, &bolt.Options{Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	st := &retryStore{Store: inner}
	m := mount(t, st, nil)
	st.waitApplied = m.WaitApplied
	body := func(i, v int) []byte {
		return fmt.Appendf(nil, "file %d version %d %s\n", i, v, bytes.Repeat([]byte{byte('a' + v)}, 100*v))
	}
	for i := range 8 {
		p := fmt.Sprintf("/s/%d", i)
		put(t, inner, m, store.PutRequest{Path: p, Data: body(i, 1)})
		st.arm(p, body(i, 2), body(i, 3))
		out, err := exec.Command("cat", m.path(p)).CombinedOutput()
		st.mu.Lock()
		step, serr := st.step, st.err
		st.step = 0
		st.mu.Unlock()
		if serr != nil {
			t.Fatalf("%s: %v", p, serr)
		}
		if err != nil {
			t.Errorf("cat %s: %v: %s", p, err, out)
			continue
		}
		if step != 0 {
			t.Errorf("%s: the interleaving stopped at step %d; cat read %q", p, step, out)
		}
		if !bytes.Equal(out, body(i, 2)) && !bytes.Equal(out, body(i, 3)) {
			t.Errorf("cat %s printed %q, want version 2 or 3 whole", p, out)
		}
		waitApplied(t, inner, m)
	}
}
