package vfs_test

import (
	"errors"
	iofs "io/fs"
	"os"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs"
)

// TestSharedCloseToOpen: on a mount of a store other hosts write
// (Options.Shared), an open that follows a change this mount's kernel has
// not been told of yet (its events are held back, as another host's are
// until they arrive) sees the change: a file whose name the kernel had
// found missing is there, and a file the kernel still resolves to the
// version it read a moment ago reads the newer one.
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
	ls.lose(true)
	put(t, ls, nil, store.PutRequest{Path: "/f", Data: []byte("two!")})
	put(t, ls, nil, store.PutRequest{Path: "/new", Data: []byte("new")})
	for p, want := range map[string]string{"/f": "two!", "/new": "new"} {
		if got, err := os.ReadFile(m.path(p)); err != nil || string(got) != want {
			t.Errorf("read %s after a change the kernel was not told of: %q, %v; want %q", p, got, err, want)
		}
	}
}
