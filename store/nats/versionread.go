package nats

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// read runs fn on this host's state for the operation op on path; a path
// it finds nothing at is looked up again once the host caught up with the
// cluster, as Stat does.
func (s *Store) read(ctx context.Context, op, path string, fn func(st *state) error) error {
	if err := check.Path(op, path); err != nil {
		return err
	}
	run := func() error {
		if err := s.check(ctx); err != nil {
			return err
		}
		s.view.mu.RLock()
		defer s.view.mu.RUnlock()
		return fn(s.view.st)
	}
	err := run()
	if errors.Is(err, store.ErrNotExist) {
		// Missing here may be created elsewhere: say so only once caught
		// up, and never on a copy that may be behind.
		if err = s.sync(ctx); err == nil {
			err = run()
		}
	}
	return check.PathError(op, path, err)
}

// StatAt is Stat of the tree as of revision rev (see store.Versions). It
// is safe for concurrent use.
func (s *Store) StatAt(ctx context.Context, path string, rev uint64) (store.Entry, error) {
	var e store.Entry
	err := s.read(ctx, "stat", path, func(st *state) error {
		var err error
		e, err = st.statAt(path, rev)
		return err
	})
	return e, err
}

func (st *state) statAt(p string, rev uint64) (store.Entry, error) {
	if p == depotpath.Root {
		e := entryrec.RootEntry()
		e.MTime, e.Updated = st.rootTime, st.rootTime
		st.dirTimeAt(&e, rev, liveUntil)
		return e, nil
	}
	r, until := st.atUntil(p, rev)
	if r == nil {
		return store.Entry{}, store.ErrNotExist
	}
	e := r.Entry(p)
	st.dirTimeAt(&e, rev, until)
	return e, nil
}

// ReadDirAt is ReadDir of the tree as of revision rev, sorted by name.
// It is safe for concurrent use.
func (s *Store) ReadDirAt(ctx context.Context, dir string, rev uint64) ([]store.Entry, error) {
	var out []store.Entry
	err := s.read(ctx, "readdir", dir, func(st *state) error {
		out = nil
		e, err := st.statAt(dir, rev)
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return store.ErrNotDir
		}
		for p := range st.children[dir] {
			if r := st.entries[p]; r.Revision <= rev {
				e := r.entry()
				st.dirTimeAt(&e, rev, liveUntil)
				out = append(out, e)
			}
		}
		for p := range st.vchildren[dir] {
			if r := st.entries[p]; r != nil && r.Revision <= rev {
				continue // listed above
			}
			if r, until := st.atUntil(p, rev); r != nil {
				e := r.Entry(p)
				st.dirTimeAt(&e, rev, until)
				out = append(out, e)
			}
		}
		slices.SortFunc(out, func(a, b store.Entry) int { return strings.Compare(a.Path, b.Path) })
		return nil
	})
	return out, err
}

// History returns path's live entry and retained versions, newest first.
// It is safe for concurrent use.
func (s *Store) History(ctx context.Context, path string) ([]store.Entry, error) {
	var out []store.Entry
	err := s.read(ctx, "history", path, func(st *state) error {
		out = nil
		if r := st.entries[path]; r != nil {
			out = append(out, r.entry())
		}
		vs := st.versions[path]
		for i := len(vs) - 1; i >= 0; i-- {
			out = append(out, vs[i].Entry())
		}
		if len(out) == 0 {
			return store.ErrNotExist
		}
		return nil
	})
	return out, err
}

// Snapshots lists the snapshots by name, once this host caught up with
// the cluster (see catchUp), so a snapshot any host created before the
// call is listed; those expired by the store's clock are not (see
// rules.Holding). It is safe for concurrent use.
func (s *Store) Snapshots(ctx context.Context) ([]store.Snapshot, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := s.sync(ctx); err != nil {
		return nil, fmt.Errorf("snapshots: %w", err)
	}
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	out := rules.Holding(slices.Collect(maps.Values(s.view.st.snaps)), s.now())
	slices.SortFunc(out, func(a, b store.Snapshot) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
