package nats

import (
	"context"
	"fmt"
	"math"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/chunkread"
)

// Stat returns the entry at path as this host has applied the tree; a
// path this host has no entry for is looked up again once the host caught
// up with the cluster (see catchUp), so an entry any host created before
// the call is found. It is StatAt of the live tree (no version is visible
// past every revision). It is safe for concurrent use.
func (s *Store) Stat(ctx context.Context, path string) (store.Entry, error) {
	return s.StatAt(ctx, path, math.MaxUint64)
}

// ReadDir returns the children of dir sorted by name, once this host
// caught up with the cluster (see catchUp): a listing shows every change
// any host made before the call; it fails with store.ErrUnavailable when
// this host cannot catch up within Options.WriteTimeout. It is safe for
// concurrent use.
func (s *Store) ReadDir(ctx context.Context, dir string) ([]store.Entry, error) {
	if err := check.Path("readdir", dir); err != nil {
		return nil, err
	}
	if err := s.sync(ctx); err != nil {
		return nil, check.PathError("readdir", dir, err)
	}
	return s.ReadDirAt(ctx, dir, math.MaxUint64)
}

// Open returns the content of the file at path as the cluster has it when
// Open is called: this host first catches up with every write any host
// had acknowledged (close-to-open across hosts, see catchUp), and fails
// with store.ErrUnavailable when it cannot within Options.WriteTimeout,
// rather than read its own copy, which may be older. The Content
// reads chunks from this host's cache or the servers; it keeps reading
// its bytes after the file changes, on this host until it is closed, and
// from another host for Options.GCDelay. It is safe for concurrent use.
func (s *Store) Open(ctx context.Context, path string) (store.Content, error) {
	return s.OpenAt(ctx, path, math.MaxUint64)
}

// OpenAt is Open of the file as it was at revision rev. It is safe for
// concurrent use.
func (s *Store) OpenAt(ctx context.Context, path string, rev uint64) (store.Content, error) {
	if err := check.Path("open", path); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, check.PathError("open", path, err)
	}
	// Never this host's copy when it may be behind: an open after any
	// host's acknowledgement must read it (see catchUp).
	if err := s.sync(ctx); err != nil {
		return nil, check.PathError("open", path, err)
	}
	if path == depotpath.Root {
		return nil, check.PathError("open", path, store.ErrIsDir)
	}
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	st := s.view.st
	r := st.at(path, rev)
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
	sum := r.SHA256
	return chunkread.New(blobChunks{s: s, id: s.chunks.addr.id(sum), gen: b.Gen}, sum, b.Size, b.ChunkSize, func() { s.open.add(sum, -1) }), nil
}

// blobChunks are the chunks of one generation of the content whose id
// is id: on this host they stay while the content is open (Store.open),
// elsewhere for Options.GCDelay after they were dropped.
type blobChunks struct {
	s       *Store
	id, gen string
}

// Chunks reads the content's chunks from this host's cache or the
// servers, or its inline bytes (see chunkread.Source).
func (b blobChunks) Chunks(read func(get func(i int64) ([]byte, error)) error) error {
	if b.s.closed.Load() {
		return store.ErrClosed
	}
	ctx := context.Background()
	return read(func(i int64) ([]byte, error) {
		if b.gen == genInline {
			return b.s.inlineData(ctx, b.id)
		}
		return b.s.chunks.read(ctx, b.s.chunks.blobSubject(b.id, b.gen, i))
	})
}
