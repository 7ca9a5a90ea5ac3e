package storetest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// tree returns every entry at or below root, keyed by its path relative to
// root ("" for root itself).
func tree(t testing.TB, s store.Store, root string) map[string]store.Entry {
	t.Helper()
	out := map[string]store.Entry{}
	for _, e := range snapshot(t, s).entries {
		if depotpath.Within(e.Path, root) {
			out[strings.TrimPrefix(e.Path, root)] = e
		}
	}
	return out
}

// sameTree fails unless the trees at a and b hold the same kinds, sizes,
// hashes, modes, mtimes, presence and explicitness under the same relative
// paths.
func sameTree(t testing.TB, a, b map[string]store.Entry) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("trees of %d and %d entries", len(a), len(b))
	}
	for rel, x := range a {
		y, ok := b[rel]
		if !ok {
			t.Fatalf("%q missing from the copy", rel)
		}
		if x.Kind != y.Kind || x.Size != y.Size || x.SHA256 != y.SHA256 || x.Mode != y.Mode ||
			!x.MTime.Equal(y.MTime) || x.Present != y.Present || x.Explicit != y.Explicit || x.Encoding != y.Encoding {
			t.Errorf("%q: %+v, copy %+v", rel, x, y)
		}
	}
}

// srcTree builds the tree the copy and move tests work on: files at two
// depths, an explicit empty directory and a placeholder.
func srcTree(t testing.TB, s store.Store) {
	t.Helper()
	_, err := s.Put(t.Context(), store.PutRequest{Path: "/src/a", Data: []byte("alpha"), Mode: 0o640, MTime: mustTime("2024-01-02T03:04:05Z"), Encoding: "utf-8"})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "/src/sub/b", []byte("beta"))
	put(t, s, "/src/sub/c", []byte("alpha"))
	_, err = s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{
		{Path: "/src/empty", Kind: store.KindDir},
		{Path: "/src/sub/later", Kind: store.KindFile, Size: 9},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

func testCopy(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("File", func(t *testing.T) {
		s := open(t)
		srcTree(t, s)
		src := stat(t, s, "/src/a")
		ch := watch(t, s, "/", revision(t, s))
		res, err := s.Copy(t.Context(), store.CopyRequest{From: "/src/a", To: "/dst/x/a2", Writer: "w"})
		if err != nil {
			t.Fatal(err)
		}
		e := stat(t, s, "/dst/x/a2")
		if res.Status != store.StatusCreated || res.Entries != 1 || res.Bytes != 5 || !sameEntry(res.Entry, e) {
			t.Errorf("result %+v, entry %+v", res, e)
		}
		if e.SHA256 != src.SHA256 || e.Size != 5 || e.Mode != 0o640 || !e.MTime.Equal(src.MTime) || e.Encoding != "utf-8" ||
			e.Ino == src.Ino || e.Writer != "w" || e.Updates != 0 || !e.Present {
			t.Errorf("copy %+v of %+v", e, src)
		}
		if got := read(t, s, "/dst/x/a2"); string(got) != "alpha" {
			t.Errorf("copy reads %q", got)
		}
		expect(t, ch, src.Revision, "created /dst", "created /dst/x", "created /dst/x/a2")
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/src/a"}); err != nil {
			t.Fatal(err)
		}
		if got := read(t, s, "/dst/x/a2"); string(got) != "alpha" {
			t.Errorf("after removing the source, the copy reads %q", got)
		}
	})
	t.Run("Tree", func(t *testing.T) {
		s := open(t)
		srcTree(t, s)
		before := tree(t, s, "/src")
		res, err := s.Copy(t.Context(), store.CopyRequest{From: "/src", To: "/dst", Source: "copied"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusCreated || res.Entries != 7 || res.Bytes != 14 || res.Entry.Path != "/dst" || !res.Entry.IsDir() {
			t.Errorf("result %+v", res)
		}
		sameTree(t, before, tree(t, s, "/src"))
		copied := tree(t, s, "/dst")
		sameTree(t, before, copied)
		for rel, e := range copied {
			if rel != "" && e.Source != "copied" {
				t.Errorf("%q: source %q, want the request's", rel, e.Source)
			}
		}
		if got := read(t, s, "/dst/sub/c"); string(got) != "alpha" {
			t.Errorf("copied file reads %q", got)
		}
		if _, err := s.Open(t.Context(), "/dst/sub/later"); !errors.Is(err, store.ErrNotPresent) {
			t.Errorf("copied placeholder: Open error %v, want ErrNotPresent", err)
		}
	})
	t.Run("Replace", func(t *testing.T) {
		s := open(t)
		put(t, s, "/a", []byte("new"))
		old := put(t, s, "/b", []byte("old")).Entry
		res, err := s.Copy(t.Context(), store.CopyRequest{From: "/a", To: "/b"})
		if err != nil {
			t.Fatal(err)
		}
		e := stat(t, s, "/b")
		if res.Status != store.StatusUpdated || e.Ino != old.Ino || e.Updates != 1 || !e.Created.Equal(old.Created) {
			t.Errorf("result %+v, entry %+v, was %+v", res, e, old)
		}
		if got := read(t, s, "/b"); string(got) != "new" {
			t.Errorf("replaced file reads %q", got)
		}
	})
	t.Run("OpenContentSurvives", func(t *testing.T) {
		s := open(t)
		put(t, s, "/a", []byte("first"))
		put(t, s, "/b", []byte("second"))
		c, err := s.Open(t.Context(), "/b")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := s.Copy(t.Context(), store.CopyRequest{From: "/a", To: "/b"}); err != nil {
			t.Fatal(err)
		}
		if got := readContent(t, c); string(got) != "second" {
			t.Errorf("a Content opened before the copy reads %q", got)
		}
	})
	t.Run("Rejected", func(t *testing.T) {
		testTransferRejected(t, open, func(ctx context.Context, s store.Store, req store.CopyRequest) error {
			_, err := s.Copy(ctx, req)
			return err
		})
	})
}

func testMove(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("File", func(t *testing.T) {
		s := open(t)
		put(t, s, "/keep", []byte("k"))
		src := put(t, s, "/a/b/f", []byte("moving")).Entry
		ch := watch(t, s, "/", src.Revision)
		res, err := s.Move(t.Context(), store.MoveRequest{From: "/a/b/f", To: "/c/g", Writer: "mover"})
		if err != nil {
			t.Fatal(err)
		}
		e := stat(t, s, "/c/g")
		if res.Status != store.StatusCreated || res.Entries != 1 || res.Bytes != 6 || !sameEntry(res.Entry, e) {
			t.Errorf("result %+v, entry %+v", res, e)
		}
		if e.SHA256 != src.SHA256 || !e.Created.Equal(src.Created) || e.Writer != "mover" || e.Ino == src.Ino {
			t.Errorf("moved %+v, was %+v", e, src)
		}
		if got := read(t, s, "/c/g"); string(got) != "moving" {
			t.Errorf("moved file reads %q", got)
		}
		for _, p := range []string{"/a/b/f", "/a/b", "/a"} {
			if _, err := s.Stat(t.Context(), p); !errors.Is(err, store.ErrNotExist) {
				t.Errorf("%s after the move: %v, want ErrNotExist (implicit parents go with their last child)", p, err)
			}
		}
		expect(t, ch, src.Revision, "created /c", "created /c/g", "removed /a/b/f", "removed /a/b", "removed /a")
	})
	t.Run("Tree", func(t *testing.T) {
		s := open(t)
		srcTree(t, s)
		before := tree(t, s, "/src")
		ch := watch(t, s, "/", revision(t, s))
		res, err := s.Move(t.Context(), store.MoveRequest{From: "/src", To: "/moved/here"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusCreated || res.Entries != 7 || res.Bytes != 14 {
			t.Errorf("result %+v", res)
		}
		sameTree(t, before, tree(t, s, "/moved/here"))
		if _, err := s.Stat(t.Context(), "/src"); !errors.Is(err, store.ErrNotExist) {
			t.Errorf("/src after the move: %v", err)
		}
		if got := read(t, s, "/moved/here/sub/b"); string(got) != "beta" {
			t.Errorf("moved file reads %q", got)
		}
		var created, removed []string
		for range 1 + 2*len(before) {
			ev := NextEvent(t, ch)
			switch ev.Kind {
			case store.EventCreated:
				if len(removed) > 0 {
					t.Errorf("created %s after a removal", ev.Path)
				}
				created = append(created, ev.Path)
			case store.EventRemoved:
				removed = append(removed, ev.Path)
			default:
				t.Errorf("unexpected event %s", describe(ev))
			}
		}
		if len(created) != 1+len(before) || len(removed) != len(before) || created[0] != "/moved" || removed[len(removed)-1] != "/src" {
			t.Errorf("created %q, removed %q", created, removed)
		}
	})
	t.Run("Replace", func(t *testing.T) {
		s := open(t)
		put(t, s, "/a", []byte("new"))
		old := put(t, s, "/b", []byte("old")).Entry
		res, err := s.Move(t.Context(), store.MoveRequest{From: "/a", To: "/b"})
		if err != nil {
			t.Fatal(err)
		}
		if e := stat(t, s, "/b"); res.Status != store.StatusUpdated || e.Ino != old.Ino || e.Updates != 1 {
			t.Errorf("result %+v, entry %+v", res, e)
		}
		if got := read(t, s, "/b"); string(got) != "new" {
			t.Errorf("replaced file reads %q", got)
		}
		if _, err := s.Stat(t.Context(), "/a"); !errors.Is(err, store.ErrNotExist) {
			t.Errorf("/a after the move: %v", err)
		}
	})
	t.Run("OpenContentSurvives", func(t *testing.T) {
		s := open(t)
		data := bytes.Repeat([]byte("x"), 3000)
		put(t, s, "/a", data)
		put(t, s, "/b", []byte("replaced"))
		c, err := s.Open(t.Context(), "/b")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := s.Move(t.Context(), store.MoveRequest{From: "/a", To: "/b"}); err != nil {
			t.Fatal(err)
		}
		if got := readContent(t, c); string(got) != "replaced" {
			t.Errorf("a Content opened before the move reads %q", got)
		}
		if got := read(t, s, "/b"); !bytes.Equal(got, data) {
			t.Errorf("moved file reads %d bytes", len(got))
		}
	})
	t.Run("Rejected", func(t *testing.T) {
		testTransferRejected(t, open, func(ctx context.Context, s store.Store, req store.CopyRequest) error {
			_, err := s.Move(ctx, store.MoveRequest{From: req.From, To: req.To, IfAbsent: req.IfAbsent, IfRevision: req.IfRevision, Writer: req.Writer})
			return err
		})
	})
}

// testTransferRejected checks the calls Copy and Move both refuse, and
// that each refusal changes nothing.
func testTransferRejected(t *testing.T, open func(t *testing.T) store.Store, call func(context.Context, store.Store, store.CopyRequest) error) {
	s := open(t)
	srcTree(t, s)
	put(t, s, "/file", []byte("f"))
	e := stat(t, s, "/src/a")
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		req  store.CopyRequest
		want error
	}{
		{"Missing", t.Context(), store.CopyRequest{From: "/missing", To: "/x"}, store.ErrNotExist},
		{"FromRoot", t.Context(), store.CopyRequest{From: "/", To: "/x"}, fs.ErrInvalid},
		{"ToRoot", t.Context(), store.CopyRequest{From: "/src/a", To: "/"}, fs.ErrInvalid},
		{"Same", t.Context(), store.CopyRequest{From: "/src/a", To: "/src/a"}, fs.ErrInvalid},
		{"IntoItself", t.Context(), store.CopyRequest{From: "/src", To: "/src/sub/deeper"}, fs.ErrInvalid},
		{"Unclean", t.Context(), store.CopyRequest{From: "/src/a", To: "/x/../y"}, depotpath.ErrInvalid},
		{"FileOverDir", t.Context(), store.CopyRequest{From: "/src/a", To: "/src/sub"}, store.ErrConflict},
		{"DirOverDir", t.Context(), store.CopyRequest{From: "/src/sub", To: "/src/empty"}, store.ErrExist},
		{"DirOverFile", t.Context(), store.CopyRequest{From: "/src/sub", To: "/file"}, store.ErrExist},
		{"IfAbsent", t.Context(), store.CopyRequest{From: "/src/a", To: "/file", IfAbsent: true}, store.ErrExist},
		{"UnderFile", t.Context(), store.CopyRequest{From: "/src/a", To: "/file/x"}, store.ErrConflict},
		{"IfRevision", t.Context(), store.CopyRequest{From: "/src/a", To: "/x", IfRevision: e.Revision + 100}, store.ErrRevision},
		{"Cancelled", cancelled, store.CopyRequest{From: "/src/a", To: "/x"}, context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, s)
			wantErr(t, tt.name, call(tt.ctx, s, tt.req), tt.want)
			unchanged(t, s, before)
		})
	}
	if err := call(t.Context(), s, store.CopyRequest{From: "/src/a", To: "/x", IfRevision: e.Revision}); err != nil {
		t.Errorf("with the current revision: %v", err)
	}
}
