package vfs_test

import (
	"errors"
	iofs "io/fs"
	"os"
	"slices"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs"
)

// TestSharedCloseToOpen: on a mount of a store other hosts write
// (Options.Shared), an open that follows a change this mount's kernel has
// not been told of yet (its events are held back, as another host's are
// until they arrive) sees the change: a file whose name the kernel had
// found missing is there, a file the kernel still resolves to the version
// it read a moment ago reads the newer one, and a listing the kernel had
// cached shows the new file.
func TestSharedCloseToOpen(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t, nil)
	ls := &lossyStore{Store: st, inject: make(chan store.Event)}
	m := mount(t, ls, &vfs.Options{Shared: true})
	put(t, ls, m, store.PutRequest{Path: "/f", Data: []byte("one")})
	if got, err := os.ReadFile(m.path("/f")); err != nil || string(got) != "one" {
		t.Fatalf("read /f: %q, %v", got, err)
	}
	if _, err := os.Stat(m.path("/new")); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("stat /new before it exists: %v", err)
	}
	if _, err := os.ReadDir(m.Dir()); err != nil { // the kernel caches the listing
		t.Fatal(err)
	}
	ls.lose(true)
	put(t, ls, nil, store.PutRequest{Path: "/f", Data: []byte("two!")})
	put(t, ls, nil, store.PutRequest{Path: "/new", Data: []byte("new")})
	for p, want := range map[string]string{"/f": "two!", "/new": "new"} {
		if got, err := os.ReadFile(m.path(p)); err != nil || string(got) != want {
			t.Errorf("read %s after a change the kernel was not told of: %q, %v; want %q", p, got, err, want)
		}
	}
	des, err := os.ReadDir(m.Dir())
	if err != nil || !slices.ContainsFunc(des, func(de os.DirEntry) bool { return de.Name() == "new" }) {
		t.Errorf("listing after a change the kernel was not told of: %v, %v; want new in it", des, err)
	}
}
