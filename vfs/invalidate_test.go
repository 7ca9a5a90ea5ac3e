package vfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs"
)

// TestUpdateNeverStale updates a file through the store 20 times (100
// with DEPOTFS_SOAK=1); after each acknowledged write a fresh cat process
// and os.ReadFile both see the new bytes, even when the size and mtime do
// not change. A stale page cache shows on the first update.
func TestUpdateNeverStale(t *testing.T) {
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		name    string
		content func(i int) []byte
		mtime   time.Time
	}{
		{"size changes", func(i int) []byte { return []byte(fmt.Sprintf("version %d\n%s", i, bytes.Repeat([]byte("x"), i))) }, time.Time{}},
		{"same size and mtime", func(i int) []byte { return []byte(fmt.Sprintf("version %03d\n", i)) }, mtime},
		{"many pages, same size and mtime", func(i int) []byte { return pattern(300<<10, byte(i)) }, mtime},
	}
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	for ti, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fmt.Sprintf("/updates/%d/file", ti)
			for i := range bySoak(20, 100) {
				want := tt.content(i)
				put(t, st, m, store.PutRequest{Path: p, Data: want, MTime: tt.mtime})
				out, err := exec.Command("cat", m.path(p)).Output()
				if err != nil {
					t.Fatalf("update %d: cat: %v", i, err)
				}
				if !bytes.Equal(out, want) {
					t.Fatalf("update %d: cat read %d stale bytes, want %d new ones", i, len(out), len(want))
				}
				if got := readFile(t, m.path(p)); !bytes.Equal(got, want) {
					t.Fatalf("update %d: os.ReadFile read %d stale bytes, want %d new ones", i, len(got), len(want))
				}
				fi, err := os.Stat(m.path(p))
				if err != nil || fi.Size() != int64(len(want)) {
					t.Fatalf("update %d: stat %v, %v; want size %d", i, fi, err, len(want))
				}
			}
		})
	}
}

// TestOpenFileKeepsItsVersion checks that a file opened before an update
// reads the old version to the end, while new opens read the new one.
func TestOpenFileKeepsItsVersion(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	v1, v2 := pattern(1<<20, 1), pattern(1<<20, 2)
	put(t, st, m, store.PutRequest{Path: "/f", Data: v1})
	f, err := os.Open(m.path("/f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 4096)
	if _, err := f.ReadAt(head, 0); err != nil || !bytes.Equal(head, v1[:4096]) {
		t.Fatalf("first read of v1: %v", err)
	}
	put(t, st, m, store.PutRequest{Path: "/f", Data: v2})
	if got := readFile(t, m.path("/f")); !bytes.Equal(got, v2) {
		t.Errorf("a new open reads the old version")
	}
	rest := make([]byte, len(v1)-4096)
	if _, err := f.ReadAt(rest, 4096); err != nil || !bytes.Equal(rest, v1[4096:]) {
		t.Errorf("the open file no longer reads v1 (%v)", err)
	}
	if got := readFile(t, m.path("/f")); !bytes.Equal(got, v2) {
		t.Errorf("the old reader put old pages where new opens see them")
	}
}

// TestCreateRemove checks that names appear and disappear as the store
// changes, although the kernel had cached the listings and lookups.
func TestCreateRemove(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	put(t, st, m, store.PutRequest{Path: "/keep/file", Data: []byte("k")})
	ls := func(dir string) []string {
		t.Helper()
		ents, err := os.ReadDir(m.path(dir))
		if err != nil {
			t.Fatalf("readdir %s: %v", dir, err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	exists := func(p string) bool {
		t.Helper()
		_, err := os.Stat(m.path(p))
		if err != nil && !errors.Is(err, iofs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			t.Fatalf("stat %s: %v", p, err)
		}
		return err == nil
	}
	remove := func(p string, recursive bool) {
		t.Helper()
		if err := st.Remove(ctx, store.RemoveRequest{Path: p, Recursive: recursive}); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, st, m)
	}
	steps := []struct {
		name   string
		change func()
		dir    string
		want   []string
		absent []string
	}{
		{"warm the caches", func() {}, "/keep", []string{"file"}, []string{"/keep/new", "/deep"}},
		{"create beside", func() { put(t, st, m, store.PutRequest{Path: "/keep/new", Data: []byte("n")}) }, "/keep", []string{"file", "new"}, nil},
		{"create with new parents", func() { put(t, st, m, store.PutRequest{Path: "/deep/er/leaf", Data: []byte("l")}) }, "/", []string{"deep", "keep"}, nil},
		{"remove a file", func() { remove("/keep/new", false) }, "/keep", []string{"file"}, []string{"/keep/new"}},
		{"remove the last child of implicit parents", func() { remove("/deep/er/leaf", false) }, "/", []string{"keep"}, []string{"/deep/er/leaf", "/deep/er", "/deep"}},
		{"remove a tree", func() { remove("/keep", true) }, "/", nil, []string{"/keep/file", "/keep"}},
		{"a file where a directory was", func() {
			put(t, st, m, store.PutRequest{Path: "/keep", Data: []byte("now a file")})
		}, "/", []string{"keep"}, []string{"/keep/file"}},
	}
	for _, s := range steps {
		// Look everything up first, so the kernel has it cached.
		_ = ls(s.dir)
		for _, p := range s.absent {
			exists(p)
		}
		s.change()
		if got := ls(s.dir); !slices.Equal(got, s.want) {
			t.Errorf("%s: ls %s = %v, want %v", s.name, s.dir, got, s.want)
		}
		for _, name := range s.want {
			if p := m.path(s.dir + "/" + name); !exists(s.dir + "/" + name) {
				t.Errorf("%s: %s listed but not found", s.name, p)
			}
		}
		for _, p := range s.absent {
			if exists(p) {
				t.Errorf("%s: %s still exists", s.name, p)
			}
		}
	}
	if got := string(readFile(t, m.path("/keep"))); got != "now a file" {
		t.Errorf("/keep reads %q", got)
	}
}

// lossyStore passes a bolt store's events through until told to lose them,
// and can inject events, so a test can make the mount resync.
type lossyStore struct {
	store.Store
	mu     sync.Mutex
	losing bool
	inject chan store.Event
}

func (s *lossyStore) lose(b bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.losing = b
}

func (s *lossyStore) Watch(ctx context.Context, prefix string, since uint64) (<-chan store.Event, error) {
	in, err := s.Store.Watch(ctx, prefix, since)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event)
	go func() {
		defer close(out)
		for {
			var ev store.Event
			select {
			case e, ok := <-in:
				if !ok {
					return
				}
				s.mu.Lock()
				losing := s.losing
				s.mu.Unlock()
				if losing {
					continue
				}
				ev = e
			case ev = <-s.inject:
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

// TestResync checks that a resync event invalidates everything the kernel
// has cached: contents, attributes, names and listings.
func TestResync(t *testing.T) {
	ctx := context.Background()
	bst, _ := newStore(t, nil)
	st := &lossyStore{Store: bst, inject: make(chan store.Event)}
	m := mount(t, st, nil)
	put(t, st, m, store.PutRequest{Path: "/a/file", Data: []byte("old contents")})
	put(t, st, m, store.PutRequest{Path: "/a/gone", Data: []byte("bye")})
	if _, err := os.ReadDir(m.path("/a")); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, m.path("/a/file"))); got != "old contents" {
		t.Fatalf("read %q", got)
	}
	if _, err := os.Stat(m.path("/a/gone")); err != nil {
		t.Fatal(err)
	}
	// The kernel remembers that /a/added is missing.
	if _, err := os.Stat(m.path("/a/added")); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("stat /a/added before it exists: %v", err)
	}

	st.lose(true)
	put(t, st, nil, store.PutRequest{Path: "/a/file", Data: []byte("new contents")})
	put(t, st, nil, store.PutRequest{Path: "/a/added", Data: []byte("hi")})
	if err := st.Remove(ctx, store.RemoveRequest{Path: "/a/gone"}); err != nil {
		t.Fatal(err)
	}
	rev, err := st.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.lose(false)
	st.inject <- store.Event{Kind: store.EventResync, Path: "/", Revision: rev}
	if err := m.WaitApplied(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, m.path("/a/file"))); got != "new contents" {
		t.Errorf("after resync: read %q", got)
	}
	ents, err := os.ReadDir(m.path("/a"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"added", "file"}) {
		t.Errorf("after resync: ls = %v", names)
	}
	if _, err := os.Stat(m.path("/a/gone")); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("after resync: stat removed file: %v", err)
	}
	if _, err := os.Stat(m.path("/a/added")); err != nil {
		t.Errorf("after resync: stat of a file created while events were lost: %v", err)
	}
}

func TestWaitApplied(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	res := put(t, st, m, store.PutRequest{Path: "/f", Data: []byte("x")})

	// A revision already applied returns at once.
	if err := m.WaitApplied(context.Background(), res.Entry.Revision); err != nil {
		t.Errorf("applied revision: %v", err)
	}
	// A revision not reached yet waits for ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := m.WaitApplied(ctx, res.Entry.Revision+100); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("future revision: %v, want deadline exceeded", err)
	}
	// A waiter is released by the change it waits for.
	done := make(chan error, 1)
	go func() { done <- m.WaitApplied(context.Background(), res.Entry.Revision+1) }()
	put(t, st, nil, store.PutRequest{Path: "/f", Data: []byte("y")})
	if err := <-done; err != nil {
		t.Errorf("waiter: %v", err)
	}
	// A waiter is released by unmounting.
	go func() { done <- m.WaitApplied(context.Background(), res.Entry.Revision+100) }()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, vfs.ErrUnmounted) {
		t.Errorf("waiter at unmount: %v, want ErrUnmounted", err)
	}
	if err := m.WaitApplied(context.Background(), res.Entry.Revision+100); !errors.Is(err, vfs.ErrUnmounted) {
		t.Errorf("after unmount: %v, want ErrUnmounted", err)
	}
}

// TestOpenOfOutdatedVersion checks the guard behind the invalidations: when
// the kernel still holds an old version's name (here because the event was
// lost), opening it reads one version whole, with the size fstat gives: the
// old one while the node still holds its content (what a stat just before
// showed), then the new one. Never an error, nor the new bytes with the old
// size.
func TestOpenOfOutdatedVersion(t *testing.T) {
	bst, _ := newStore(t, nil)
	st := &lossyStore{Store: bst, inject: make(chan store.Event)}
	m := mount(t, st, &vfs.Options{EntryTimeout: time.Hour, AttrTimeout: time.Hour})
	put(t, st, m, store.PutRequest{Path: "/f", Data: []byte("version one")})
	if got := string(readFile(t, m.path("/f"))); got != "version one" {
		t.Fatalf("read %q", got)
	}
	st.lose(true)
	put(t, st, nil, store.PutRequest{Path: "/f", Data: []byte("version two, longer")})
	read := func() string {
		t.Helper()
		f, err := os.Open(m.path("/f"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(f)
		if err != nil || int64(len(got)) != fi.Size() {
			t.Fatalf("read %q, %v; fstat says %d bytes", got, err, fi.Size())
		}
		if s := string(got); s != "version one" && s != "version two, longer" {
			t.Fatalf("read %q, no version", s)
		}
		return string(got)
	}
	if got := read(); got != "version one" {
		t.Errorf("an open right after the update read %q, want the version the kernel showed", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for read() != "version two, longer" {
		if time.Now().After(deadline) {
			t.Fatal("the new version never showed")
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
	if out, err := exec.Command("cat", m.path("/f")).Output(); err != nil || string(out) != "version two, longer" {
		t.Errorf("cat printed %q, %v; want the new version", out, err)
	}
}
