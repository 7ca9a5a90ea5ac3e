package storetest

import (
	"io/fs"
	"slices"
	"testing"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// uncleanPaths are refused by every method with depotpath.ErrInvalid.
var uncleanPaths = []string{"", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/../b", "/..", `/a\b`, "/a\x00b", "/a\nb", "/\xff"}

func testPaths(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	put(t, s, "/a/b", []byte("x"))
	before := snapshot(t, s)
	ctx := t.Context()
	calls := map[string]func(p string) error{
		"Stat":    func(p string) error { _, err := s.Stat(ctx, p); return err },
		"ReadDir": func(p string) error { _, err := s.ReadDir(ctx, p); return err },
		"Open":    func(p string) error { _, err := s.Open(ctx, p); return err },
		"Put":     func(p string) error { _, err := s.Put(ctx, store.PutRequest{Path: p, Data: []byte("y")}); return err },
		"Remove":  func(p string) error { return s.Remove(ctx, store.RemoveRequest{Path: p, Recursive: true}) },
		"Watch":   func(p string) error { _, err := s.Watch(ctx, p, 0); return err },
		"Declare": func(p string) error {
			_, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{
				{Path: "/ok", Kind: store.KindFile, Size: -1},
				{Path: p, Kind: store.KindFile, Size: -1},
			}})
			return err
		},
		"PutChunk": func(p string) error {
			_, err := s.PutChunk(ctx, store.Chunk{UploadID: "u", Count: 1, Data: []byte("y"), File: store.PutRequest{Path: p, SHA256: Sum([]byte("y"))}})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			for _, p := range uncleanPaths {
				wantErr(t, name+"("+p+")", call(p), depotpath.ErrInvalid)
			}
			unchanged(t, s, before)
		})
	}
}

func testStat(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Root", func(t *testing.T) {
		s := open(t)
		root := stat(t, s, "/")
		if root.Path != "/" || root.Kind != store.KindDir || !root.IsDir() || root.Ino != store.RootIno {
			t.Errorf("Stat(/) = %+v, want the root directory with Ino %d", root, store.RootIno)
		}
	})
	t.Run("NotExist", func(t *testing.T) {
		s := open(t)
		put(t, s, "/a/b", []byte("x"))
		for _, p := range []string{"/missing", "/a/missing", "/a/b/c", "/ab"} {
			_, err := s.Stat(t.Context(), p)
			wantErr(t, "Stat("+p+")", err, store.ErrNotExist)
			wantErr(t, "Stat("+p+")", err, fs.ErrNotExist)
		}
	})
	t.Run("Entries", func(t *testing.T) {
		s := open(t)
		res := put(t, s, "/a/b/c.txt", []byte("hello"))
		e := stat(t, s, "/a/b/c.txt")
		if !sameEntry(e, res.Entry) {
			t.Errorf("Stat = %+v\nPut returned %+v", e, res.Entry)
		}
		inos := map[uint64]string{store.RootIno: "/"}
		for _, p := range []string{"/a", "/a/b", "/a/b/c.txt"} {
			e := stat(t, s, p)
			if e.Path != p {
				t.Errorf("Stat(%s).Path = %q", p, e.Path)
			}
			if e.Ino == 0 {
				t.Errorf("Stat(%s).Ino is 0", p)
			}
			if other, dup := inos[e.Ino]; dup {
				t.Errorf("Stat(%s).Ino %d is also %s's", p, e.Ino, other)
			}
			inos[e.Ino] = p
			if p != "/a/b/c.txt" && (e.Kind != store.KindDir || e.Explicit) {
				t.Errorf("Stat(%s) = %+v, want an implicit directory", p, e)
			}
		}
	})
}

func testReadDir(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	for _, p := range []string{"/a/x", "/a/b/c", "/ab/y", "/a.b/z", "/a b/w", "/a/B", "/top"} {
		put(t, s, p, []byte(p))
	}
	tests := []struct {
		dir  string
		want []string
	}{
		{"/", []string{"/a", "/a b", "/a.b", "/ab", "/top"}},
		{"/a", []string{"/a/B", "/a/b", "/a/x"}},
		{"/a/b", []string{"/a/b/c"}},
		{"/ab", []string{"/ab/y"}},
	}
	for _, tt := range tests {
		es, err := s.ReadDir(t.Context(), tt.dir)
		if err != nil {
			t.Fatalf("ReadDir(%s): %v", tt.dir, err)
		}
		if got := paths(es); !slices.Equal(got, tt.want) {
			t.Errorf("ReadDir(%s) = %q, want %q", tt.dir, got, tt.want)
		}
		for _, e := range es {
			if st := stat(t, s, e.Path); !sameEntry(st, e) {
				t.Errorf("ReadDir(%s) has %+v, Stat says %+v", tt.dir, e, st)
			}
		}
	}
	empty := open(t)
	if es, err := empty.ReadDir(t.Context(), "/"); err != nil || len(es) != 0 {
		t.Errorf("ReadDir(/) of an empty store = %v, %v; want nothing", es, err)
	}
	_, err := s.ReadDir(t.Context(), "/missing")
	wantErr(t, "ReadDir(/missing)", err, store.ErrNotExist)
	_, err = s.ReadDir(t.Context(), "/top")
	wantErr(t, "ReadDir(/top)", err, store.ErrNotDir)
}
