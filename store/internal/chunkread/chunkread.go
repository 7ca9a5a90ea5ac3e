// Package chunkread reads content stored as fixed-size chunks: the
// store.Content both stores hand out. Which chunks a range covers, the
// bounds, io.EOF and closing are decided here; where a chunk comes from,
// and what keeps it while the content is open, are the store's.
package chunkread

import (
	"fmt"
	"io"
	"io/fs"
	"sync/atomic"

	"github.com/depotfs/depotfs/store"
)

// Source gives the chunks of one content.
type Source interface {
	// Chunks calls read once, with get returning the bytes of chunk i
	// (every chunk holds the content's chunk size but the last), and
	// returns read's error or its own. A store may hold a read
	// transaction across the call, or report itself closed.
	Chunks(read func(get func(i int64) ([]byte, error)) error) error
}

// ReadAt reads len(p) bytes at off from content of size bytes stored in
// chunks of chunkSize bytes (named sum in errors) from src, reading only
// the chunks the range covers. Like io.ReaderAt, it returns io.EOF when
// the range reaches past the end; a read of nothing returns 0, nil
// without asking src.
func ReadAt(src Source, sum string, size, chunkSize int64, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read at %d: %w", off, fs.ErrInvalid)
	}
	if off >= size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := min(int64(len(p)), size-off)
	if want == 0 {
		return 0, nil
	}
	n := 0
	err := src.Chunks(func(get func(i int64) ([]byte, error)) error {
		for int64(n) < want {
			pos := off + int64(n)
			i, within := pos/chunkSize, pos%chunkSize
			v, err := get(i)
			if err != nil {
				return err
			}
			if int64(len(v)) <= within {
				return fmt.Errorf("corrupt store: chunk %d of %s is missing or short", i, sum)
			}
			n += copy(p[n:want], v[within:])
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// Content is a store.Content over a Source: a snapshot of one content
// that reads its chunks until closed. It is safe for concurrent use.
type Content struct {
	src       Source
	sum       string
	size      int64
	chunkSize int64
	release   func()
	closed    atomic.Bool
}

var _ store.Content = (*Content)(nil)

// New returns the content sum of size bytes, stored in chunks of
// chunkSize bytes read from src; the first Close calls release, which
// lets the store drop what kept the chunks for it.
func New(src Source, sum string, size, chunkSize int64, release func()) *Content {
	return &Content{src: src, sum: sum, size: size, chunkSize: chunkSize, release: release}
}

// Size is the content's length.
func (c *Content) Size() int64 { return c.size }

// SHA256 is the content's hash, in lowercase hex.
func (c *Content) SHA256() string { return c.sum }

// ReadAt reads len(p) bytes at off (see the package's ReadAt); after
// Close it fails with fs.ErrClosed.
func (c *Content) ReadAt(p []byte, off int64) (int, error) {
	if c.closed.Load() {
		return 0, fs.ErrClosed
	}
	return ReadAt(c.src, c.sum, c.size, c.chunkSize, p, off)
}

// Close releases the content. It is idempotent.
func (c *Content) Close() error {
	if !c.closed.Swap(true) {
		c.release()
	}
	return nil
}
