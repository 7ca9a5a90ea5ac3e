package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestListIsReadDir: a Listing shows what ReadDir shows, entry for entry
// (names, kinds, inode numbers and revisions read at once; the rest
// decoded on demand), in a plain and a sealed store, whose hashes the
// listing opens only when an entry is asked for; and fails as ReadDir
// does.
func TestListIsReadDir(t *testing.T) {
	for name, opts := range map[string]*bolt.Options{"plain": nil, "sealed": {Key: testKEK(t)}} {
		t.Run(name, func(t *testing.T) {
			s, _ := openTemp(t, opts)
			ctx := context.Background()
			if _, err := s.List(ctx, "/"); err != nil {
				t.Fatalf("List of an empty store's root: %v", err)
			}
			var reqs []store.PutRequest
			for _, p := range []string{"/top.txt", "/a/one.txt", "/a/three.txt", "/a/deeper/x", "/a/ü.txt"} {
				reqs = append(reqs, store.PutRequest{Path: p, Data: []byte(p), Encoding: "utf-8", Source: "push:1", Writer: "agent"})
			}
			if _, err := s.PutBatch(ctx, reqs); err != nil {
				t.Fatal(err)
			}
			const sum = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
			if _, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{{Path: "/a/two.txt", Kind: store.KindFile, Size: 5, SHA256: sum}}}); err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{"/", "/a", "/a/deeper"} {
				want, err := s.ReadDir(ctx, dir)
				if err != nil {
					t.Fatal(err)
				}
				l, err := s.List(ctx, dir)
				if err != nil {
					t.Fatal(err)
				}
				if l.Len() != len(want) {
					t.Fatalf("List(%s): %d entries, ReadDir %d", dir, l.Len(), len(want))
				}
				for i, w := range want {
					got, err := l.Entry(i)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, w) {
						t.Errorf("List(%s) entry %d:\n %+v\nReadDir:\n %+v", dir, i, got, w)
					}
					raw, err := l.Raw(i)
					if err != nil {
						t.Fatal(err)
					}
					if raw.SHA256 != "" || raw.DeclaredSHA256 != "" || !reflect.DeepEqual(raw.Spelled(), w) {
						t.Errorf("List(%s).Raw(%d) = %+v, spelled %+v; want %+v", dir, i, raw, raw.Spelled(), w)
					}
					at := l.At(i)
					if wantAt := (store.Listed{Name: depotpath.Base(w.Path), Kind: w.Kind, Ino: w.Ino, Revision: w.Revision}); at != wantAt {
						t.Errorf("List(%s).At(%d) = %+v, want %+v", dir, i, at, wantAt)
					}
				}
			}
			// The entries decoded share the listing's strings: a node the
			// kernel keeps holds its source.
			l, err := s.List(ctx, "/a")
			if err != nil {
				t.Fatal(err)
			}
			one, err1 := l.Entry(1)
			three, err2 := l.Entry(2)
			if err1 != nil || err2 != nil || one.Source != "push:1" || unsafe.StringData(one.Source) != unsafe.StringData(three.Source) {
				t.Errorf("entries decoded from one listing: sources %q and %q (%v, %v), not one string", one.Source, three.Source, err1, err2)
			}
			for p, want := range map[string]error{"/top.txt": store.ErrNotDir, "/missing": store.ErrNotExist} {
				if _, err := s.List(ctx, p); !errors.Is(err, want) {
					t.Errorf("List(%s): %v, want %v", p, err, want)
				}
			}
		})
	}
}

// BenchmarkListFiles is BenchmarkReadDirFiles through List, reading what
// READDIR needs of every entry: beside it, what a walk's listing of a
// directory of 1,000 stored files costs the mount now.
func BenchmarkListFiles(b *testing.B) {
	s, _ := openTemp(b, nil)
	ctx := context.Background()
	reqs := putDirOfFiles(b, s, "/b0/d00000", 1000)
	b.ReportAllocs()
	for b.Loop() {
		l, err := s.List(ctx, "/b0/d00000")
		if err != nil || l.Len() != len(reqs) {
			b.Fatal(err)
		}
		for i := range l.Len() {
			if l.At(i).Name == "" {
				b.Fatal("no name")
			}
		}
	}
}

// TestListAfterRelease: listings made from released ones' records (the
// same size, smaller, larger, one after the other as a walk lists) show
// what ReadDir shows, and the names and entries taken from a released
// listing stay as they were.
func TestListAfterRelease(t *testing.T) {
	s, _ := openTemp(t, nil)
	ctx := context.Background()
	sizes := map[string]int{"/a": 300, "/b": 300, "/c": 20, "/d": 900, "/e": 1}
	var reqs []store.PutRequest
	for dir, n := range sizes {
		for i := range n {
			reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("%s/f%04d", dir, i), Data: []byte(dir + fmt.Sprint(i)), Source: "push:" + dir, Encoding: "utf-8"})
		}
	}
	if _, err := s.PutBatch(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	type kept struct {
		name  string
		entry store.Entry
	}
	var keep []kept
	for round := range 2 {
		for _, dir := range []string{"/a", "/b", "/c", "/d", "/e", "/a", "/d", "/c"} {
			want, err := s.ReadDir(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			l, err := s.List(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if l.Len() != len(want) {
				t.Fatalf("round %d, List(%s): %d entries, ReadDir %d", round, dir, l.Len(), len(want))
			}
			for i, w := range want {
				got, err := l.Entry(i)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, w) {
					t.Fatalf("round %d, List(%s) entry %d:\n %+v\nReadDir:\n %+v", round, dir, i, got, w)
				}
				if i%97 == 0 {
					keep = append(keep, kept{l.At(i).Name, got})
				}
			}
			l.Release()
		}
	}
	for _, k := range keep {
		if want, err := s.Stat(ctx, k.entry.Path); err != nil || !reflect.DeepEqual(k.entry, want) || k.name != depotpath.Base(want.Path) {
			t.Errorf("kept from a released listing: %q %+v; Stat: %+v, %v", k.name, k.entry, want, err)
		}
	}
}

// BenchmarkListEntry decodes every entry of a listed directory of 1,000
// stored files, as ls -lR's lookups do, a listing a round.
func BenchmarkListEntry(b *testing.B) {
	s, _ := openTemp(b, nil)
	ctx := context.Background()
	putDirOfFiles(b, s, "/b0/d00000", 1000)
	l, err := s.List(ctx, "/b0/d00000")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range l.Len() {
			if _, err := l.Entry(i); err != nil {
				b.Fatal(err)
			}
		}
	}
}
