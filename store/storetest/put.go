package storetest

import (
	"bytes"
	"context"
	"io/fs"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

func testPut(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Created", func(t *testing.T) {
		s := open(t)
		mtime := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
		expires := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		data := []byte("hello, depot")
		res, err := s.Put(t.Context(), store.PutRequest{
			Path: "/dir/f.txt", Data: data, SHA256: Sum(data), Mode: 0o640, MTime: mtime,
			Encoding: "utf-8", Source: "test:1", Writer: "alice", Expires: expires, Pinned: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		e := res.Entry
		if res.Status != store.StatusCreated {
			t.Errorf("Status = %v, want created", res.Status)
		}
		switch {
		case e.Path != "/dir/f.txt", e.Kind != store.KindFile, e.Size != int64(len(data)), e.SHA256 != Sum(data),
			e.Mode != 0o640, !e.MTime.Equal(mtime), e.Encoding != "utf-8", e.Source != "test:1", e.Writer != "alice",
			!e.Expires.Equal(expires), !e.Pinned, !e.Present, e.Updates != 0, e.Ino == 0, e.Ino == store.RootIno,
			e.Created.IsZero(), e.Updated.IsZero():
			t.Errorf("entry = %+v", e)
		}
		if rev := revision(t, s); e.Revision != rev || rev == 0 {
			t.Errorf("entry revision %d, store revision %d", e.Revision, rev)
		}
		if got := read(t, s, "/dir/f.txt"); !bytes.Equal(got, data) {
			t.Errorf("read %q, want %q", got, data)
		}
	})
	t.Run("Defaults", func(t *testing.T) {
		s := open(t)
		before := time.Now()
		e := put(t, s, "/f", []byte("x")).Entry
		if e.Mode != 0 {
			t.Errorf("Mode = %v, want 0 (the mount's default)", e.Mode)
		}
		if e.MTime.IsZero() || e.MTime.Before(before.Add(-time.Hour)) || e.MTime.After(time.Now().Add(time.Hour)) {
			t.Errorf("MTime = %v, want the arrival time (about %v)", e.MTime, before)
		}
		if e.Pinned || !e.Expires.IsZero() {
			t.Errorf("entry = %+v, want unpinned and never expiring", e)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		s := open(t)
		e := put(t, s, "/empty", nil).Entry
		if e.Size != 0 || e.SHA256 != Sum(nil) || !e.Present {
			t.Errorf("entry = %+v", e)
		}
		if got := read(t, s, "/empty"); len(got) != 0 {
			t.Errorf("read %q", got)
		}
	})
	t.Run("Updated", func(t *testing.T) {
		s := open(t)
		first := put(t, s, "/f", []byte("one")).Entry
		res := put(t, s, "/f", []byte("two"))
		e := res.Entry
		if res.Status != store.StatusUpdated || e.Updates != 1 || e.Ino != first.Ino || !e.Created.Equal(first.Created) ||
			e.SHA256 != Sum([]byte("two")) || e.Revision <= first.Revision {
			t.Errorf("after update: %v %+v (first %+v)", res.Status, e, first)
		}
		if e2 := put(t, s, "/f", []byte("three")).Entry; e2.Updates != 2 {
			t.Errorf("Updates = %d after two updates", e2.Updates)
		}
		if got := read(t, s, "/f"); string(got) != "three" {
			t.Errorf("read %q", got)
		}
	})
	t.Run("Unchanged", func(t *testing.T) {
		s := open(t)
		mtime := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		first, err := s.Put(t.Context(), store.PutRequest{Path: "/f", Data: []byte("same"), Mode: 0o600, MTime: mtime})
		if err != nil {
			t.Fatal(err)
		}
		rev := revision(t, s)
		res, err := s.Put(t.Context(), store.PutRequest{Path: "/f", Data: []byte("same"), Mode: 0o600})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusUnchanged || res.Entry.Updates != 0 || !sameEntry(res.Entry, first.Entry) {
			t.Errorf("identical Put: %v %+v, want unchanged %+v", res.Status, res.Entry, first.Entry)
		}
		if r := revision(t, s); r != rev {
			t.Errorf("identical Put moved the revision from %d to %d", rev, r)
		}
		res, err = s.Put(t.Context(), store.PutRequest{Path: "/f", Data: []byte("same"), Mode: 0o644, Pinned: true, Writer: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		e := res.Entry
		if res.Status != store.StatusUnchanged || e.Updates != 0 || e.Mode != 0o644 || !e.Pinned || e.Writer != "bob" ||
			!e.MTime.Equal(mtime) || e.Revision <= rev {
			t.Errorf("metadata Put: %v %+v", res.Status, e)
		}
		if st := stat(t, s, "/f"); !sameEntry(st, e) {
			t.Errorf("Stat = %+v, want %+v", st, e)
		}
	})
	t.Run("Dedup", func(t *testing.T) {
		s := open(t)
		data := bytes.Repeat([]byte("shared "), 1000)
		a := put(t, s, "/a", data).Entry
		b := put(t, s, "/x/b", data).Entry
		if a.SHA256 != b.SHA256 || a.SHA256 != Sum(data) {
			t.Errorf("same bytes, hashes %s and %s", a.SHA256, b.SHA256)
		}
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/a"}); err != nil {
			t.Fatal(err)
		}
		if got := read(t, s, "/x/b"); !bytes.Equal(got, data) {
			t.Error("removing one copy broke the other")
		}
		put(t, s, "/x/b", []byte("other"))
		put(t, s, "/c", data)
		if got := read(t, s, "/c"); !bytes.Equal(got, data) {
			t.Error("content stored again after its last reference went is wrong")
		}
	})
	t.Run("Placeholder", func(t *testing.T) {
		s := open(t)
		if _, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/p", Kind: store.KindFile, Size: 3}}}); err != nil {
			t.Fatal(err)
		}
		ph := stat(t, s, "/p")
		res := put(t, s, "/p", []byte("abc"))
		if res.Status != store.StatusCreated || !res.Entry.Present || res.Entry.Ino != ph.Ino || res.Entry.Updates != 0 {
			t.Errorf("content for a placeholder: %v %+v", res.Status, res.Entry)
		}
	})
	t.Run("Conditions", func(t *testing.T) {
		s := open(t)
		first := put(t, s, "/f", []byte("one")).Entry
		if _, err := s.Put(t.Context(), store.PutRequest{Path: "/new", Data: []byte("n"), IfAbsent: true}); err != nil {
			t.Errorf("IfAbsent on a new path: %v", err)
		}
		res, err := s.Put(t.Context(), store.PutRequest{Path: "/f", Data: []byte("two"), IfRevision: first.Revision})
		if err != nil || res.Status != store.StatusUpdated {
			t.Fatalf("IfRevision with the current revision: %v %v", res.Status, err)
		}
	})
	t.Run("Rejected", func(t *testing.T) { testPutRejected(t, open) })
}

// testPutRejected checks every way a Put can fail, and that it changed nothing.
func testPutRejected(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	old := put(t, s, "/file", []byte("old content")).Entry.Revision
	put(t, s, "/file", []byte("content"))
	put(t, s, "/dir/child", []byte("c"))
	if _, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/placeholder", Kind: store.KindFile, Size: -1}}}); err != nil {
		t.Fatal(err)
	}
	rev := stat(t, s, "/file").Revision
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		req  store.PutRequest
		want error
	}{
		{"HashMismatch", t.Context(), store.PutRequest{Path: "/file", Data: []byte("new"), SHA256: Sum([]byte("other"))}, store.ErrHashMismatch},
		{"HashMismatchNew", t.Context(), store.PutRequest{Path: "/n/new", Data: []byte("new"), SHA256: Sum([]byte("other"))}, store.ErrHashMismatch},
		{"HashNotHex", t.Context(), store.PutRequest{Path: "/n/new", Data: []byte("new"), SHA256: "xyz"}, store.ErrHashMismatch},
		{"IfAbsent", t.Context(), store.PutRequest{Path: "/file", Data: []byte("new"), IfAbsent: true}, store.ErrExist},
		{"IfAbsentPlaceholder", t.Context(), store.PutRequest{Path: "/placeholder", Data: []byte("new"), IfAbsent: true}, fs.ErrExist},
		{"IfRevisionOld", t.Context(), store.PutRequest{Path: "/file", Data: []byte("new"), IfRevision: old}, store.ErrRevision},
		{"IfRevisionFuture", t.Context(), store.PutRequest{Path: "/file", Data: []byte("new"), IfRevision: rev + 100}, store.ErrRevision},
		{"IfRevisionMissing", t.Context(), store.PutRequest{Path: "/n/missing", Data: []byte("new"), IfRevision: rev}, store.ErrRevision},
		{"UnderFile", t.Context(), store.PutRequest{Path: "/file/sub", Data: []byte("new")}, store.ErrConflict},
		{"DeepUnderFile", t.Context(), store.PutRequest{Path: "/file/a/b/c", Data: []byte("new")}, store.ErrConflict},
		{"OverDir", t.Context(), store.PutRequest{Path: "/dir", Data: []byte("new")}, store.ErrConflict},
		{"OverRoot", t.Context(), store.PutRequest{Path: "/", Data: []byte("new")}, store.ErrConflict},
		{"Cancelled", cancelled, store.PutRequest{Path: "/n/new", Data: []byte("new")}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, s)
			_, err := s.Put(tt.ctx, tt.req)
			wantErr(t, "Put", err, tt.want)
			unchanged(t, s, before)
		})
	}
	if got := read(t, s, "/file"); string(got) != "content" {
		t.Errorf("after rejected Puts, /file reads %q", got)
	}
}
