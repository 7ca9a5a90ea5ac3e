package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// testTreeRaces removes and moves directories while other calls create
// entries below them. Whatever order the store commits the calls in, and
// however it groups them into commits, a removed or moved directory takes
// along everything below it at that moment: no entry is ever left whose
// parent directory does not exist.
func testTreeRaces(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := withinDeadline(t)
	const writers, rounds = 6, 12
	for round := range rounds {
		dir := fmt.Sprintf("/race%d", round)
		seed := store.DeclareRequest{Entries: []store.Declaration{{Path: dir + "/seed", Kind: store.KindFile, Size: 1}}}
		if _, err := s.Declare(ctx, seed); err != nil {
			t.Fatal(err)
		}
		var paths []string
		for w := range writers {
			paths = append(paths, fmt.Sprintf("%s/w%d/f", dir, w))
		}
		errs := make(chan error, writers+1)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, p := range paths {
			wg.Go(func() {
				<-start
				_, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{{Path: p, Kind: store.KindFile, Size: 1}}})
				errs <- err
			})
		}
		wg.Go(func() {
			<-start
			var err error
			if round%2 == 0 {
				err = s.Remove(ctx, store.RemoveRequest{Path: dir, Recursive: true})
			} else {
				_, err = s.Move(ctx, store.MoveRequest{From: dir, To: dir + "moved"})
			}
			errs <- err
		})
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		for _, p := range append(paths, dir+"/seed") {
			for _, at := range []string{p, dir + "moved" + p[len(dir):]} {
				if err := parentsExist(ctx, s, at); err != nil {
					t.Errorf("round %d: %v", round, err)
				}
			}
		}
	}
}

// parentsExist fails when the entry at p exists without its parent
// directories.
func parentsExist(ctx context.Context, s store.Store, p string) error {
	if _, err := s.Stat(ctx, p); errors.Is(err, store.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, dir := range depotpath.Parents(p) {
		e, err := s.Stat(ctx, dir)
		if err != nil {
			return fmt.Errorf("%s exists, its parent %s: %w", p, dir, err)
		}
		if e.Kind != store.KindDir {
			return fmt.Errorf("%s exists, its parent %s is a %s", p, dir, e.Kind)
		}
	}
	return nil
}
