package bolt

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	bbolt "go.etcd.io/bbolt"
)

// Remove deletes the entry at req.Path in one transaction: a file, an empty
// directory, or with req.Recursive a directory and everything below it
// (deepest first, one event each); a non-empty directory without Recursive
// fails with store.ErrNotEmpty. Implicit parent directories left empty
// are removed too. Removing "/" fails with an error wrapping fs.ErrInvalid.
// It is safe for concurrent use.
func (s *Store) Remove(ctx context.Context, req store.RemoveRequest) error {
	p := req.Path
	if err := check.Remove(p); err != nil {
		return err
	}
	err := s.update(ctx, func(w *wtx) error {
		r, err := getEntry(w.tree, p)
		if err != nil {
			return err
		}
		if r == nil {
			return store.ErrNotExist
		}
		if err := entryrec.CheckRevision(r, req.IfRevision); err != nil {
			return err
		}
		if r.Kind == store.KindDir && hasChildren(w.tree, p) {
			if !req.Recursive {
				return store.ErrNotEmpty
			}
			below, err := descendants(w.tree, p)
			if err != nil {
				return err
			}
			for _, d := range below {
				if err := w.remove(d.path, d.rec); err != nil {
					return err
				}
			}
		}
		if err := w.remove(p, r); err != nil {
			return err
		}
		return w.pruneParents(p)
	})
	return pathErr("remove", p, err)
}

type pathRecord struct {
	path string
	rec  *record
}

// descendants returns every entry below dir, deepest first.
func descendants(tree *bbolt.Bucket, dir string) ([]pathRecord, error) {
	var out []pathRecord
	c := tree.Cursor()
	// Children have keys "dir\x00name"; deeper entries "dir/sub...\x00name".
	for _, prefix := range [][]byte{dirPrefix(dir), []byte(dir + "/")} {
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			r, err := decodeRecord(v)
			if err != nil {
				return nil, err
			}
			out = append(out, pathRecord{keyPath(k), r})
		}
	}
	slices.SortFunc(out, func(a, b pathRecord) int {
		if c := cmp.Compare(strings.Count(b.path, "/"), strings.Count(a.path, "/")); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	return out, nil
}
