package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

// openAt opens the store at path with opts, closing it when t ends.
func openAt(t testing.TB, path string, opts *bolt.Options) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// openTemp opens a new store in a temporary directory.
func openTemp(t testing.TB, opts *bolt.Options) (*bolt.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "depot.db")
	return openAt(t, path, opts), path
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t, nil)
		return s
	})
}

func TestConformanceSmallChunks(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t, &bolt.Options{ChunkSize: 1000})
		return s
	})
}
