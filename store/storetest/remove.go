package storetest

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"

	"github.com/depotfs/depotfs/store"
)

func testRemove(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("File", func(t *testing.T) {
		s := open(t)
		put(t, s, "/a/b/f", []byte("x"))
		put(t, s, "/keep", []byte("k"))
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/a/b/f"}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/a/b/f", "/a/b", "/a"} {
			if _, err := s.Stat(t.Context(), p); err == nil {
				t.Errorf("%s still exists; implicit parents go with their last child", p)
			}
		}
		stat(t, s, "/keep")
	})
	t.Run("ImplicitParentWithSibling", func(t *testing.T) {
		s := open(t)
		put(t, s, "/a/b/f", []byte("x"))
		put(t, s, "/a/g", []byte("y"))
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/a/b/f"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(t.Context(), "/a/b"); err == nil {
			t.Error("/a/b survived its last child")
		}
		stat(t, s, "/a")
	})
	t.Run("ExplicitParentStays", func(t *testing.T) {
		s := open(t)
		if _, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/a/b", Kind: store.KindDir}}}); err != nil {
			t.Fatal(err)
		}
		put(t, s, "/a/b/f", []byte("x"))
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/a/b/f"}); err != nil {
			t.Fatal(err)
		}
		if e := stat(t, s, "/a/b"); !e.Explicit {
			t.Errorf("/a/b = %+v, want explicit", e)
		}
		stat(t, s, "/a")
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/a/b"}); err != nil {
			t.Fatalf("removing an empty directory: %v", err)
		}
		if _, err := s.Stat(t.Context(), "/a"); err == nil {
			t.Error("/a survived its last child")
		}
	})
	t.Run("Recursive", func(t *testing.T) {
		s := open(t)
		for _, p := range []string{"/d/a", "/d/b/c", "/d/b/d/e", "/d2/x", "/d.x"} {
			put(t, s, p, []byte(p))
		}
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/d", Recursive: true}); err != nil {
			t.Fatal(err)
		}
		es, err := s.ReadDir(t.Context(), "/")
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(es); !slices.Equal(got, []string{"/d.x", "/d2"}) {
			t.Errorf("after removing /d, / has %q", got)
		}
		stat(t, s, "/d2/x")
		if got := len(snapshot(t, s).entries); got != 3 {
			t.Errorf("%d entries left, want 3", got)
		}
	})
	t.Run("Conditional", func(t *testing.T) {
		s := open(t)
		e := put(t, s, "/f", []byte("x")).Entry
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/f", IfRevision: e.Revision}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Rejected", func(t *testing.T) {
		s := open(t)
		e := put(t, s, "/d/f", []byte("x")).Entry
		cancelled, cancel := context.WithCancel(t.Context())
		cancel()
		for _, tt := range []struct {
			name string
			ctx  context.Context
			req  store.RemoveRequest
			want error
		}{
			{"Missing", t.Context(), store.RemoveRequest{Path: "/missing"}, store.ErrNotExist},
			{"UnderFile", t.Context(), store.RemoveRequest{Path: "/d/f/g"}, store.ErrNotExist},
			{"NotEmpty", t.Context(), store.RemoveRequest{Path: "/d"}, store.ErrNotEmpty},
			{"Root", t.Context(), store.RemoveRequest{Path: "/", Recursive: true}, fs.ErrInvalid},
			{"IfRevision", t.Context(), store.RemoveRequest{Path: "/d/f", IfRevision: e.Revision + 1}, store.ErrRevision},
			{"Cancelled", cancelled, store.RemoveRequest{Path: "/d/f"}, context.Canceled},
		} {
			t.Run(tt.name, func(t *testing.T) {
				before := snapshot(t, s)
				wantErr(t, "Remove", s.Remove(tt.ctx, tt.req), tt.want)
				unchanged(t, s, before)
			})
		}
	})
}

func testDeclare(t *testing.T, open func(t *testing.T) store.Store) {
	mtime := mustTime("2024-03-04T05:06:07Z")
	t.Run("Placeholders", func(t *testing.T) {
		s := open(t)
		res, err := s.Declare(t.Context(), store.DeclareRequest{Writer: "w", Source: "listing", Entries: []store.Declaration{
			{Path: "/p/known", Kind: store.KindFile, Size: 42, MTime: mtime, Mode: 0o600},
			{Path: "/p/unknown", Kind: store.KindFile, Size: -1},
			{Path: "/p/empty", Kind: store.KindDir},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if res != (store.DeclareResult{Created: 3}) {
			t.Errorf("result %+v, want 3 created", res)
		}
		known := stat(t, s, "/p/known")
		if known.Kind != store.KindFile || known.Present || known.Size != 42 || !known.MTime.Equal(mtime) ||
			known.Mode != 0o600 || known.SHA256 != "" || known.Writer != "w" || known.Source != "listing" || known.Ino == 0 {
			t.Errorf("placeholder = %+v", known)
		}
		if u := stat(t, s, "/p/unknown"); u.Size != 0 || u.Present || u.MTime.IsZero() {
			t.Errorf("placeholder of unknown size = %+v, want size 0 and the arrival time", u)
		}
		if d := stat(t, s, "/p/empty"); !d.IsDir() || !d.Explicit {
			t.Errorf("declared directory = %+v", d)
		}
		if p := stat(t, s, "/p"); !p.IsDir() || p.Explicit {
			t.Errorf("parent = %+v, want implicit", p)
		}
		rev := revision(t, s)
		res, err = s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{
			{Path: "/p/known", Kind: store.KindFile, Size: 42, MTime: mtime},
			{Path: "/p/empty", Kind: store.KindDir},
			{Path: "/", Kind: store.KindDir},
		}})
		if err != nil || res != (store.DeclareResult{Unchanged: 3}) {
			t.Errorf("declaring again: %+v, %v; want 3 unchanged", res, err)
		}
		if r := revision(t, s); r != rev {
			t.Errorf("declaring what is known moved the revision from %d to %d", rev, r)
		}
	})
	t.Run("Stale", func(t *testing.T) {
		data := []byte("present content")
		for _, tt := range []struct {
			name  string
			decl  store.Declaration
			stale bool
		}{
			{"Matching", store.Declaration{Size: int64(len(data)), SHA256: Sum(data)}, false},
			{"AllUnknown", store.Declaration{Size: -1}, false},
			{"Size", store.Declaration{Size: 3}, true},
			{"SHA256", store.Declaration{Size: -1, SHA256: Sum([]byte("other"))}, true},
			{"MTime", store.Declaration{Size: -1, MTime: mtime}, true},
		} {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				before := put(t, s, "/f", data).Entry
				tt.decl.Path, tt.decl.Kind = "/f", store.KindFile
				res, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{tt.decl}})
				if err != nil {
					t.Fatal(err)
				}
				e := stat(t, s, "/f")
				if !tt.stale {
					if res != (store.DeclareResult{Unchanged: 1}) || !sameEntry(e, before) {
						t.Errorf("result %+v, entry %+v; want unchanged %+v", res, e, before)
					}
					return
				}
				if res != (store.DeclareResult{Stale: 1}) || e.Present || e.SHA256 != "" || e.Ino != before.Ino || e.Revision <= before.Revision {
					t.Errorf("result %+v, entry %+v; want a stale placeholder", res, e)
				}
				if e.DeclaredSHA256 != tt.decl.SHA256 {
					t.Errorf("DeclaredSHA256 = %q, want the declared %q", e.DeclaredSHA256, tt.decl.SHA256)
				}
				if tt.decl.Size >= 0 && e.Size != tt.decl.Size {
					t.Errorf("Size = %d, want the declared %d", e.Size, tt.decl.Size)
				}
				if !tt.decl.MTime.IsZero() && !e.MTime.Equal(tt.decl.MTime) {
					t.Errorf("MTime = %v, want the declared %v", e.MTime, tt.decl.MTime)
				}
				_, err = s.Open(t.Context(), "/f")
				wantErr(t, "Open(stale)", err, store.ErrNotPresent)
				if res := put(t, s, "/f", data); res.Status != store.StatusCreated {
					t.Errorf("content for a stale placeholder: %v", res.Status)
				}
			})
		}
	})
	t.Run("DeclaredSHA256", func(t *testing.T) { testDeclaredSHA256(t, open) })
	t.Run("ExplicitExisting", func(t *testing.T) {
		s := open(t)
		put(t, s, "/d/f", []byte("x"))
		if _, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/d", Kind: store.KindDir}}}); err != nil {
			t.Fatal(err)
		}
		if d := stat(t, s, "/d"); !d.Explicit {
			t.Errorf("/d = %+v, want explicit", d)
		}
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/d/f"}); err != nil {
			t.Fatal(err)
		}
		stat(t, s, "/d")
	})
	t.Run("Rejected", func(t *testing.T) {
		s := open(t)
		put(t, s, "/file", []byte("x"))
		put(t, s, "/dir/f", []byte("y"))
		ok := store.Declaration{Path: "/new/ok", Kind: store.KindFile, Size: 1}
		cancelled, cancel := context.WithCancel(t.Context())
		cancel()
		for _, tt := range []struct {
			name string
			ctx  context.Context
			decl store.Declaration
			want error
		}{
			{"FileUnderFile", t.Context(), store.Declaration{Path: "/file/x", Kind: store.KindFile, Size: -1}, store.ErrConflict},
			{"DirUnderFile", t.Context(), store.Declaration{Path: "/file/x", Kind: store.KindDir}, store.ErrConflict},
			{"FileOverDir", t.Context(), store.Declaration{Path: "/dir", Kind: store.KindFile, Size: -1}, store.ErrConflict},
			{"DirOverFile", t.Context(), store.Declaration{Path: "/file", Kind: store.KindDir}, store.ErrConflict},
			{"RootFile", t.Context(), store.Declaration{Path: "/", Kind: store.KindFile, Size: -1}, store.ErrConflict},
			{"BadKind", t.Context(), store.Declaration{Path: "/k", Kind: 0, Size: -1}, fs.ErrInvalid},
			{"BadSize", t.Context(), store.Declaration{Path: "/k", Kind: store.KindFile, Size: -2}, fs.ErrInvalid},
			{"BadHash", t.Context(), store.Declaration{Path: "/k", Kind: store.KindFile, Size: -1, SHA256: "nothex"}, fs.ErrInvalid},
			{"Cancelled", cancelled, store.Declaration{Path: "/k", Kind: store.KindFile, Size: -1}, context.Canceled},
		} {
			t.Run(tt.name, func(t *testing.T) {
				before := snapshot(t, s)
				// A valid declaration first: all or nothing.
				_, err := s.Declare(tt.ctx, store.DeclareRequest{Entries: []store.Declaration{ok, tt.decl}})
				if err == nil {
					t.Fatalf("Declare(%+v) succeeded", tt.decl)
				}
				if !errors.Is(err, tt.want) {
					t.Fatalf("Declare(%+v): %v, want %v", tt.decl, err, tt.want)
				}
				unchanged(t, s, before)
			})
		}
		t.Run("Conflicting", func(t *testing.T) {
			before := snapshot(t, s)
			_, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{
				{Path: "/c", Kind: store.KindFile, Size: -1},
				{Path: "/c/d", Kind: store.KindFile, Size: -1},
			}})
			wantErr(t, "Declare(file and a file under it)", err, store.ErrConflict)
			unchanged(t, s, before)
		})
	})
}

// testDeclaredSHA256 follows a placeholder's declared hash: kept with the
// placeholder (listings, copies, moves), replaced by a declaration that
// changes the placeholder, dropped when content arrives.
func testDeclaredSHA256(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	a, b := []byte("aaa"), []byte("bbb")
	declare := func(d store.Declaration) store.DeclareResult {
		t.Helper()
		d.Path, d.Kind = "/h", store.KindFile
		res, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{d}})
		if err != nil {
			t.Fatalf("Declare(%+v): %v", d, err)
		}
		return res
	}
	check := func(p string, want string) {
		t.Helper()
		if e := stat(t, s, p); e.DeclaredSHA256 != want || e.SHA256 != "" || e.Present {
			t.Errorf("%s: DeclaredSHA256 %q, SHA256 %q, present %v; want a placeholder declared %q", p, e.DeclaredSHA256, e.SHA256, e.Present, want)
		}
	}
	if res := declare(store.Declaration{Size: 3, SHA256: Sum(a)}); res.Created != 1 {
		t.Errorf("declaring /h: %+v", res)
	}
	check("/h", Sum(a))
	es, err := s.ReadDir(t.Context(), "/")
	if err != nil || len(es) != 1 || es[0].DeclaredSHA256 != Sum(a) {
		t.Errorf("ReadDir(/) = %+v, %v; want /h with its declared hash", es, err)
	}
	rev := revision(t, s)
	if res := declare(store.Declaration{Size: 3, SHA256: Sum(a)}); res.Unchanged != 1 {
		t.Errorf("declaring the same hash again: %+v, want unchanged", res)
	}
	if res := declare(store.Declaration{Size: -1}); res.Unchanged != 1 {
		t.Errorf("declaring without a hash: %+v, want unchanged", res)
	}
	check("/h", Sum(a))
	if r := revision(t, s); r != rev {
		t.Errorf("declarations that changed nothing moved the revision from %d to %d", rev, r)
	}
	if res := declare(store.Declaration{Size: -1, SHA256: Sum(b)}); res.Stale != 1 {
		t.Errorf("declaring another hash: %+v, want stale", res)
	}
	check("/h", Sum(b))
	if _, err := s.Copy(t.Context(), store.CopyRequest{From: "/h", To: "/copy"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Move(t.Context(), store.MoveRequest{From: "/copy", To: "/moved"}); err != nil {
		t.Fatal(err)
	}
	check("/moved", Sum(b))
	if res := declare(store.Declaration{Size: 4}); res.Stale != 1 {
		t.Errorf("declaring another size: %+v, want stale", res)
	}
	check("/h", "")
	declare(store.Declaration{Size: 3, SHA256: Sum(b)})
	put(t, s, "/h", b)
	if e := stat(t, s, "/h"); !e.Present || e.SHA256 != Sum(b) || e.DeclaredSHA256 != "" {
		t.Errorf("after its content arrived: %+v, want present with no declared hash", e)
	}
}
