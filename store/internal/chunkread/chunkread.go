// Package chunkread reads a byte range of content stored as fixed-size
// chunks: the io.ReaderAt both stores' store.Content implement. Which
// chunks a range covers, the bounds and io.EOF are decided here; where a
// chunk comes from is the store's.
package chunkread

import (
	"fmt"
	"io"
	"io/fs"
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
