package bolt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest/pastcheck"
)

// TestPastAgainstModel runs the model-based checker of the past
// (pastcheck) on bolt stores keeping 0, 1 and 3 versions, restarted now
// and then: 300 operations each by default, 10 runs of 3,000 under
// DEPOTFS_SOAK=1.
func TestPastAgainstModel(t *testing.T) {
	for _, keep := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("Keep%d", keep), func(t *testing.T) {
			t.Parallel()
			checkPast(t, keep)
		})
	}
}

// checkPast runs pastcheck on new stores keeping keep versions.
func checkPast(t *testing.T, keep int) {
	runs, ops := 1, 300
	if os.Getenv("DEPOTFS_SOAK") != "" {
		runs, ops = 10, 3000
	}
	for range runs {
		clk := pastcheck.NewClock()
		path := filepath.Join(t.TempDir(), "depot.db")
		s := openAt(t, path, &bolt.Options{KeepVersions: keep, Now: clk.Now})
		reopen := func(ctx context.Context, keep int) (store.Store, error) {
			if err := s.Close(); err != nil {
				return nil, err
			}
			next, err := bolt.Open(path, &bolt.Options{KeepVersions: keep, Now: clk.Now})
			if err != nil {
				return nil, err
			}
			s = next
			return next, nil
		}
		t.Cleanup(func() {
			verify(t, s)
			s.Close()
		})
		rep := pastcheck.Check(t, t.Context(), s, pastcheck.Config{Seed: pastcheck.Seed(), Ops: ops, KeepVersions: keep,
			Clock: clk, Reopen: reopen})
		if len(rep.Anomalies) > 0 {
			return
		}
	}
}
