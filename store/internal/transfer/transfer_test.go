package transfer_test

import (
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/transfer"
)

var (
	t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func file(sum string) *entryrec.Record {
	return &entryrec.Record{Kind: store.KindFile, Ino: 5, Size: 3, SHA256: sum, Present: true, Created: t0, Updated: t0, Source: "orig", Revision: 8}
}

var dir = &entryrec.Record{Kind: store.KindDir, Ino: 6, Revision: 9}

func TestChecks(t *testing.T) {
	mv := transfer.Move(store.MoveRequest{From: "/a", To: "/b", IfRevision: 8})
	if mv.Op() != "move" || transfer.Copy(store.CopyRequest{}).Op() != "copy" {
		t.Fatal("Op names the wrong operation")
	}
	absent := transfer.Copy(store.CopyRequest{From: "/a", To: "/b", IfAbsent: true})
	plain := transfer.Copy(store.CopyRequest{From: "/a", To: "/b"})
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"no source", plain.CheckSource(nil), store.ErrNotExist},
		{"source at the revision", mv.CheckSource(file("x")), nil},
		{"source moved on", mv.CheckSource(dir), store.ErrRevision},
		{"to a new path", plain.CheckDestination(file("x"), nil), nil},
		{"file over a file", plain.CheckDestination(file("x"), file("y")), nil},
		{"over anything, if absent", absent.CheckDestination(file("x"), file("y")), store.ErrExist},
		{"directory over a file", plain.CheckDestination(dir, file("y")), store.ErrExist},
		{"file over a directory", plain.CheckDestination(file("x"), dir), store.ErrConflict},
		{"source is the root", transfer.Copy(store.CopyRequest{From: "/", To: "/b"}).Check(), fs.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) || (tc.want == nil && tc.err != nil) {
				t.Fatalf("got %v, want %v", tc.err, tc.want)
			}
		})
	}
	if got := plain.Target("/a/x/y"); got != "/b/x/y" {
		t.Fatalf("Target(/a/x/y) = %s", got)
	}
}

func TestPlace(t *testing.T) {
	src := file("x")
	cp, kind := transfer.Copy(store.CopyRequest{Writer: "b", Source: "copy"}).Place(src, nil, t1)
	if kind != store.EventCreated || cp.Ino != 0 || !cp.Created.Equal(t1) || cp.Source != "copy" || cp.Writer != "b" {
		t.Fatalf("copy to a new path: %v %+v", kind, cp)
	}
	mv, _ := transfer.Move(store.MoveRequest{Writer: "b"}).Place(src, nil, t1)
	if !mv.Created.Equal(t0) || mv.Source != "orig" {
		t.Fatalf("a move changed the creation time or provenance: %+v", mv)
	}
	old := file("y")
	old.Ino, old.Created, old.Updates = 11, t0.Add(-time.Hour), 4
	plain := transfer.Copy(store.CopyRequest{Writer: "b"})
	over, kind := plain.Place(src, old, t1)
	if kind != store.EventUpdated || over.Ino != 11 || !over.Created.Equal(old.Created) || over.Updates != 5 {
		t.Fatalf("copy over another file: %v %+v", kind, over)
	}
	if same, _ := plain.Place(src, file("x"), t1); same.Updates != 0 {
		t.Fatalf("copy over the same content counted %d updates", same.Updates)
	}
	res := transfer.Result(old)
	transfer.Tally(&res, src)
	transfer.Tally(&res, dir)
	if res.Status != store.StatusUpdated || res.Entries != 2 || res.Bytes != 3 {
		t.Fatalf("result %+v", res)
	}
}
