package store_test

import (
	"errors"
	"reflect"
	"testing"
	"unsafe"

	"github.com/depotfs/depotfs/store"
)

// TestListingOfRaw: a listing of entries (a store without a compact
// listing) gives them raw as a compact one does: hashes read from their
// hex, a path of the entry's own, the same entry spelled back; a hash
// that is not hex is an error, not a zero hash.
func TestListingOfRaw(t *testing.T) {
	const sum = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	paths := "/d/a/d/b/d/c"
	entries := []store.Entry{
		{Path: paths[0:4], Kind: store.KindFile, Ino: 2, Size: 5, SHA256: sum, Present: true, Source: "push:1", Revision: 3},
		{Path: paths[4:8], Kind: store.KindFile, Ino: 3, Size: 5, DeclaredSHA256: sum, Revision: 4},
		{Path: paths[8:12], Kind: store.KindDir, Ino: 4, Revision: 5},
	}
	l := store.ListingOf("/d", entries)
	for i, want := range entries {
		r, err := l.Raw(i)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Spelled(); !reflect.DeepEqual(got, want) || r.SHA256 != "" || r.DeclaredSHA256 != "" {
			t.Errorf("Raw(%d) = %+v, spelled %+v; want %+v", i, r, got, want)
		}
		if r.HasSum != (want.SHA256 != "") || r.HasDeclared != (want.DeclaredSHA256 != "") {
			t.Errorf("Raw(%d): HasSum %v, HasDeclared %v", i, r.HasSum, r.HasDeclared)
		}
		if unsafe.StringData(r.Path) == unsafe.StringData(want.Path) {
			t.Errorf("Raw(%d).Path shares the entry's string", i)
		}
	}
	bad := store.ListingOf("/d", []store.Entry{{Path: "/d/x", Kind: store.KindFile, SHA256: "not hex"}})
	if _, err := bad.Raw(0); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("Raw of an entry whose hash is not hex: %v, want %v", err, store.ErrCorrupt)
	}
}
