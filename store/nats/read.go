package nats

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/chunkread"
)

// rootEntry is the synthesized entry of "/".
func rootEntry() store.Entry {
	return store.Entry{Path: depotpath.Root, Kind: store.KindDir, Ino: store.RootIno, Explicit: true}
}

// Stat returns the entry at path as this host has applied the tree. It is
// safe for concurrent use.
func (s *Store) Stat(ctx context.Context, path string) (store.Entry, error) {
	if err := check.Path("stat", path); err != nil {
		return store.Entry{}, err
	}
	if err := s.check(ctx); err != nil {
		return store.Entry{}, check.PathError("stat", path, err)
	}
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	if path == depotpath.Root {
		e := rootEntry()
		e.MTime, e.Updated = s.view.st.rootTime, s.view.st.rootTime
		return e, nil
	}
	r := s.view.st.entries[path]
	if r == nil {
		return store.Entry{}, check.PathError("stat", path, store.ErrNotExist)
	}
	return r.entry(), nil
}

// ReadDir returns the children of dir sorted by name. It is safe for
// concurrent use.
func (s *Store) ReadDir(ctx context.Context, dir string) ([]store.Entry, error) {
	if err := check.Path("readdir", dir); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, check.PathError("readdir", dir, err)
	}
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	st := s.view.st
	if dir != depotpath.Root {
		r := st.entries[dir]
		if r == nil {
			return nil, check.PathError("readdir", dir, store.ErrNotExist)
		}
		if r.Kind != store.KindDir {
			return nil, check.PathError("readdir", dir, store.ErrNotDir)
		}
	}
	out := make([]store.Entry, 0, len(st.children[dir]))
	for p := range st.children[dir] {
		out = append(out, st.entries[p].entry())
	}
	slices.SortFunc(out, func(a, b store.Entry) int {
		_, x := depotpath.Split(a.Path)
		_, y := depotpath.Split(b.Path)
		return strings.Compare(x, y)
	})
	return out, nil
}

// Open returns the content of the file at path. The Content reads chunks
// from this host's cache or the servers; it keeps reading its bytes after
// the file changes, on this host until it is closed, and from another host
// for Options.GCDelay. It is safe for concurrent use.
func (s *Store) Open(ctx context.Context, path string) (store.Content, error) {
	if err := check.Path("open", path); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, check.PathError("open", path, err)
	}
	if path == depotpath.Root {
		return nil, check.PathError("open", path, store.ErrIsDir)
	}
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	st := s.view.st
	r := st.entries[path]
	switch {
	case r == nil:
		return nil, check.PathError("open", path, store.ErrNotExist)
	case r.Kind == store.KindDir:
		return nil, check.PathError("open", path, store.ErrIsDir)
	case !r.Present:
		s.uses.misses.Add(1)
		return nil, check.PathError("open", path, store.ErrNotPresent)
	}
	b := st.blobs[r.SHA256]
	if b == nil {
		return nil, check.PathError("open", path, fmt.Errorf("corrupt store: content %s is missing", r.SHA256))
	}
	s.uses.hits.Add(1)
	s.uses.touch(r.SHA256)
	s.open.add(r.SHA256, 1)
	return &content{s: s, sum: r.SHA256, gen: b.Gen, size: b.Size, chunkSize: b.ChunkSize}, nil
}

// content is a snapshot of one blob.
type content struct {
	s         *Store
	sum, gen  string
	size      int64
	chunkSize int64
	closed    atomic.Bool
}

var _ store.Content = (*content)(nil)

// Size is the content's length.
func (c *content) Size() int64 { return c.size }

// SHA256 is the content's hash.
func (c *content) SHA256() string { return c.sum }

// ReadAt reads len(p) bytes at off, fetching only the chunks the range
// covers. It is safe for concurrent use.
func (c *content) ReadAt(p []byte, off int64) (int, error) {
	if c.closed.Load() {
		return 0, fs.ErrClosed
	}
	return chunkread.ReadAt(c, c.sum, c.size, c.chunkSize, p, off)
}

// Chunks reads the content's chunks from this host's cache or the
// servers, or its inline bytes (see chunkread.Source).
func (c *content) Chunks(read func(get func(i int64) ([]byte, error)) error) error {
	if c.s.closed.Load() {
		return store.ErrClosed
	}
	ctx := context.Background()
	return read(func(i int64) ([]byte, error) {
		if c.gen == genInline {
			return c.s.inlineData(ctx, c.sum)
		}
		return c.s.chunks.read(ctx, c.s.chunks.blobSubject(c.sum, c.gen, i))
	})
}

// Close releases the content.
func (c *content) Close() error {
	if !c.closed.Swap(true) {
		c.s.open.add(c.sum, -1)
	}
	return nil
}
