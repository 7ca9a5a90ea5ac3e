package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// testPutBatch checks PutBatch: every request applies as Put would, in
// order, in one change; a refused request fails the batch with a
// *store.BatchError naming it and leaves the store exactly as it was.
func testPutBatch(t *testing.T, open Opener) {
	t.Run("Stored", func(t *testing.T) {
		s := open(t, Config{})
		put(t, s, "/b/old", []byte("old"))
		put(t, s, "/b/same", []byte("same"))
		var reqs []store.PutRequest
		for i := range 50 {
			data := content(10+i, byte(i))
			reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/b/d%d/f%d", i%5, i), Data: data, SHA256: Sum(data), Mode: 0o640, Pinned: i%2 == 0})
		}
		reqs = append(reqs,
			store.PutRequest{Path: "/b/old", Data: []byte("new")},
			store.PutRequest{Path: "/b/same", Data: []byte("same")},
			store.PutRequest{Path: "/b/twice", Data: []byte("first")},
			store.PutRequest{Path: "/b/twice", Data: []byte("second")},
		)
		res, err := s.PutBatch(t.Context(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(reqs) {
			t.Fatalf("%d results for %d requests", len(res), len(reqs))
		}
		want := map[int]store.PutStatus{50: store.StatusUpdated, 51: store.StatusUnchanged, 52: store.StatusCreated, 53: store.StatusUpdated}
		for i, req := range reqs {
			st, ok := want[i]
			if !ok {
				st = store.StatusCreated
			}
			data := req.Data
			if i == 52 {
				data = reqs[53].Data // superseded in its batch: it names the entry the batch left
			}
			if r := res[i]; r.Status != st || r.Entry.Path != req.Path || r.Entry.SHA256 != Sum(data) || r.Entry.Pinned != req.Pinned {
				t.Errorf("result %d = %+v, want %v for %s", i, r, st, req.Path)
			}
		}
		for i, req := range reqs[:50] {
			e := stat(t, s, req.Path)
			if e.Mode != 0o640 || e.Revision != res[i].Entry.Revision || !bytes.Equal(read(t, s, req.Path), req.Data) {
				t.Errorf("%s: entry %+v does not hold request %d", req.Path, e, i)
			}
		}
		if got := read(t, s, "/b/twice"); string(got) != "second" {
			t.Errorf("/b/twice reads %q, want the later request's content", got)
		}
		if rev := revision(t, s); rev != res[53].Entry.Revision {
			t.Errorf("store revision %d, the batch's last write %d", rev, res[53].Entry.Revision)
		}
		checkStats(t, s)
	})
	t.Run("Empty", func(t *testing.T) {
		s := open(t, Config{})
		put(t, s, "/f", []byte("x"))
		rev := revision(t, s)
		if res, err := s.PutBatch(t.Context(), nil); err != nil || len(res) != 0 {
			t.Fatalf("PutBatch(nil) = %v, %v", res, err)
		}
		if got := revision(t, s); got != rev {
			t.Errorf("an empty batch moved the revision from %d to %d", rev, got)
		}
	})
	ok := func(p string) store.PutRequest { return store.PutRequest{Path: p, Data: []byte(p)} }
	refused := []struct {
		name  string
		cfg   Config
		reqs  []store.PutRequest
		index int
		is    error
	}{
		{"HashMismatch", Config{}, []store.PutRequest{ok("/n/a"), ok("/n/b"), {Path: "/n/c", Data: []byte("c"), SHA256: Sum([]byte("other"))}}, 2, store.ErrHashMismatch},
		{"InvalidPath", Config{}, []store.PutRequest{ok("/n/a"), {Path: "/n/../x", Data: []byte("x")}}, 1, nil},
		{"FileUnderFileInBatch", Config{}, []store.PutRequest{ok("/n/a"), ok("/n/a/b")}, 1, store.ErrConflict},
		{"OverDirectory", Config{}, []store.PutRequest{ok("/n/new"), ok("/keep")}, 1, store.ErrConflict},
		{"IfAbsent", Config{}, []store.PutRequest{ok("/n/a"), {Path: "/keep/f", Data: []byte("y"), IfAbsent: true}}, 1, store.ErrExist},
		{"OverFileLimit", Config{MaxFileBytes: 100}, []store.PutRequest{ok("/n/a"), {Path: "/n/big", Data: content(101, 1)}}, 1, store.ErrLimit},
		{"NoRoom", Config{MaxStoreBytes: 200}, []store.PutRequest{{Path: "/n/a", Data: content(60, 1), Pinned: true}, {Path: "/n/b", Data: content(60, 2), Pinned: true}}, 1, store.ErrLimit},
	}
	for _, tc := range refused {
		t.Run("Refused"+tc.name, func(t *testing.T) {
			s := open(t, tc.cfg)
			putReq(t, s, store.PutRequest{Path: "/keep/f", Data: content(90, 9), Pinned: true})
			check := refusal(t, s)
			_, err := s.PutBatch(t.Context(), tc.reqs)
			var be *store.BatchError
			if !errors.As(err, &be) || be.Index != tc.index || be.Path != tc.reqs[tc.index].Path {
				t.Fatalf("PutBatch: %v, want a *store.BatchError for request %d (%s)", err, tc.index, tc.reqs[tc.index].Path)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("PutBatch: %v, want %v", err, tc.is)
			}
			check()
		})
	}
}
