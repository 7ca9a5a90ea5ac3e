package bolt_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// TestReadDirEntriesAreStats checks that every entry of a listing, live
// and at a snapshot's revision (versions merged with live entries), is
// what Stat says of its path: the path, the content hash and a
// placeholder's declared hash are spelled into one string a listing, so a
// wrong offset would give an entry another's path or hash.
func TestReadDirEntriesAreStats(t *testing.T) {
	s, _ := openTemp(t, nil)
	ctx := context.Background()
	put := func(p, data string) {
		t.Helper()
		if _, err := s.PutBatch(ctx, []store.PutRequest{{Path: p, Data: []byte(data)}}); err != nil {
			t.Fatal(err)
		}
	}
	put("/top.txt", "top")
	put("/a/one.txt", "one")
	put("/a/three.txt", "three")
	put("/a/deeper/x", "x")
	const sum = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	if _, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{{Path: "/a/two.txt", Kind: store.KindFile, Size: 5, SHA256: sum}}}); err != nil {
		t.Fatal(err)
	}
	snap, err := s.CreateSnapshot(ctx, store.SnapshotRequest{Name: "before"})
	if err != nil {
		t.Fatal(err)
	}
	put("/a/one.txt", "one, changed") // a version visible at the snapshot
	put("/a/four.txt", "four")        // not there at the snapshot
	if err := s.Remove(ctx, store.RemoveRequest{Path: "/a/three.txt"}); err != nil {
		t.Fatal(err)
	}

	check := func(dir string, rev uint64, want []string) {
		t.Helper()
		es, err := s.ReadDirAt(ctx, dir, rev)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Path)
			st, err := s.StatAt(ctx, e.Path, rev)
			if err != nil {
				t.Fatalf("StatAt(%s, %d) of a listed entry: %v", e.Path, rev, err)
			}
			if !reflect.DeepEqual(e, st) {
				t.Errorf("listing of %s at %d:\n %+v\nStat:\n %+v", dir, rev, e, st)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("listing of %s at %d: %q, want %q", dir, rev, got, want)
		}
	}
	const live = ^uint64(0)
	check("/", live, []string{"/a", "/top.txt"})
	check("/a", live, []string{"/a/deeper", "/a/four.txt", "/a/one.txt", "/a/two.txt"})
	check("/a/deeper", live, []string{"/a/deeper/x"})
	check("/a", snap.Revision, []string{"/a/deeper", "/a/one.txt", "/a/three.txt", "/a/two.txt"})

	es, err := s.ReadDir(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Path == "/a/two.txt" && (e.DeclaredSHA256 != sum || e.SHA256 != "") {
			t.Errorf("placeholder listed with hash %q, declared %q; want none and %q", e.SHA256, e.DeclaredSHA256, sum)
		}
		if e.Path == "/a/four.txt" && len(e.SHA256) != 64 {
			t.Errorf("stored file listed with hash %q", e.SHA256)
		}
	}
}
