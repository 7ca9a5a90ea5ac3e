package check_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
)

const sumABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" // sha256("abc")

func TestRefusals(t *testing.T) {
	lim := check.Limits{MaxFileBytes: 4, MaxStoreBytes: 8}
	chunk := func(edit func(*store.Chunk)) error {
		c := store.Chunk{UploadID: "u", Index: 0, Count: 1, Data: []byte("abc"), File: store.PutRequest{Path: "/f", SHA256: sumABC}}
		edit(&c)
		_, err := lim.Chunk(c)
		return err
	}
	decl := func(d store.Declaration) error {
		return check.Declarations([]store.Declaration{{Path: "/ok", Kind: store.KindDir}, d})
	}
	put := func(req store.PutRequest) error { _, err := lim.Put(req); return err }
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"unclean path", check.Path("stat", "/a/../b"), depotpath.ErrInvalid},
		{"put at the root", put(store.PutRequest{Path: "/"}), store.ErrConflict},
		{"put over the file limit", put(store.PutRequest{Path: "/f", Data: []byte("12345")}), store.ErrLimit},
		{"put with another hash", put(store.PutRequest{Path: "/f", Data: []byte("abc"), SHA256: strings.Repeat("0", 64)}), store.ErrHashMismatch},
		{"chunk without upload id", chunk(func(c *store.Chunk) { c.UploadID = "" }), store.ErrUpload},
		{"chunk id too long", chunk(func(c *store.Chunk) { c.UploadID = strings.Repeat("x", check.MaxUploadID+1) }), store.ErrUpload},
		{"chunk index past count", chunk(func(c *store.Chunk) { c.Index = 1 }), store.ErrUpload},
		{"chunk of the root", chunk(func(c *store.Chunk) { c.File.Path = "/" }), store.ErrConflict},
		{"chunk without file hash", chunk(func(c *store.Chunk) { c.File.SHA256 = "" }), store.ErrUpload},
		{"chunk with upper-case file hash", chunk(func(c *store.Chunk) { c.File.SHA256 = strings.ToUpper(sumABC) }), store.ErrUpload},
		{"chunk over the store limit", chunk(func(c *store.Chunk) { c.TotalSize = 9 }), store.ErrLimit},
		{"chunk with another hash", chunk(func(c *store.Chunk) { c.SHA256 = strings.Repeat("0", 64) }), store.ErrHashMismatch},
		{"declared unknown kind", decl(store.Declaration{Path: "/x", Kind: 9}), fs.ErrInvalid},
		{"declared size -2", decl(store.Declaration{Path: "/x", Kind: store.KindFile, Size: -2}), fs.ErrInvalid},
		{"declared short hash", decl(store.Declaration{Path: "/x", Kind: store.KindFile, SHA256: "ab"}), fs.ErrInvalid},
		{"declared root file", decl(store.Declaration{Path: "/", Kind: store.KindFile}), store.ErrConflict},
		{"copy of the root", check.Transfer("copy", "/", "/b", false), fs.ErrInvalid},
		{"move onto itself", check.Transfer("move", "/a", "/a", false), fs.ErrInvalid},
		{"move into itself", check.Transfer("move", "/a", "/a/b", false), fs.ErrInvalid},
		{"remove the root", check.Remove("/"), fs.ErrInvalid},
		{"put under the snapshots", put(store.PutRequest{Path: "/.snapshots/s/f"}), depotpath.ErrInvalid},
		{"chunk at the snapshots", chunk(func(c *store.Chunk) { c.File.Path = "/.snapshots" }), depotpath.ErrInvalid},
		{"declared under the snapshots", decl(store.Declaration{Path: "/.snapshots/x", Kind: store.KindDir}), depotpath.ErrInvalid},
		{"copy into the snapshots", check.Transfer("copy", "/a", "/.snapshots/a", false), depotpath.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) {
				t.Fatalf("got %v, want %v", tc.err, tc.want)
			}
			var pe *fs.PathError
			if !errors.As(tc.err, &pe) {
				t.Fatalf("%v is not an *fs.PathError", tc.err)
			}
		})
	}
}

func TestAccepts(t *testing.T) {
	lim := check.Limits{}
	sum, err := lim.Put(store.PutRequest{Path: "/f", Data: []byte("abc"), SHA256: sumABC})
	if err != nil || sum != sumABC {
		t.Fatalf("Put: %q, %v", sum, err)
	}
	if _, err := lim.Chunk(store.Chunk{UploadID: "u", Count: 2, Index: 1, Data: []byte("abc"), File: store.PutRequest{Path: "/f", SHA256: sumABC}}); err != nil {
		t.Fatalf("Chunk: %v", err)
	}
	if err := check.Declarations([]store.Declaration{{Path: "/", Kind: store.KindDir}, {Path: "/f", Kind: store.KindFile, Size: -1, SHA256: sumABC}}); err != nil {
		t.Fatalf("Declarations: %v", err)
	}
	if err := check.Transfer("move", "/a", "/ab", false); err != nil {
		t.Fatalf("Transfer to a sibling with the source's name as prefix: %v", err)
	}
	if err := check.Transfer("copy", "/a", "/a", true); err != nil {
		t.Fatalf("Transfer restoring a version over its file: %v", err)
	}
	if _, err := lim.Put(store.PutRequest{Path: "/.snapshotsx", Data: []byte("abc")}); err != nil {
		t.Fatalf("Put beside the snapshots: %v", err)
	}
}

func TestSnapshotName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"nightly-2026.01_01", true},
		{strings.Repeat("a", check.MaxSnapshotName), true},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{strings.Repeat("a", check.MaxSnapshotName+1), false},
	} {
		err := check.SnapshotName(tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, fs.ErrInvalid)) {
			t.Errorf("SnapshotName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
