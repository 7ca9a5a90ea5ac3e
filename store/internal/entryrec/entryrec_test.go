package entryrec_test

import (
	"errors"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

var (
	t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func file(sum string, present bool) *entryrec.Record {
	return &entryrec.Record{Kind: store.KindFile, Ino: 5, Size: 3, SHA256: sum, Present: present, MTime: t0, Created: t0, Updated: t0, Writer: "a", Revision: 8}
}

func TestCheckWrite(t *testing.T) {
	dir := &entryrec.Record{Kind: store.KindDir, Revision: 3}
	pending := file("x", true)
	pending.Revision = 0 // changed earlier in the same nats group commit
	for _, tc := range []struct {
		name       string
		r          *entryrec.Record
		ifAbsent   bool
		ifRevision uint64
		want       error
	}{
		{"new file", nil, false, 0, nil},
		{"over a directory", dir, false, 0, store.ErrConflict},
		{"if absent, exists", file("x", true), true, 0, store.ErrExist},
		{"if absent, absent", nil, true, 0, nil},
		{"revision matches", file("x", true), false, 8, nil},
		{"revision differs", file("x", true), false, 7, store.ErrRevision},
		{"revision of nothing", nil, false, 8, store.ErrRevision},
		{"revision not assigned yet", pending, false, 8, store.ErrRevision},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := entryrec.CheckWrite(tc.r, tc.ifAbsent, tc.ifRevision)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestPut(t *testing.T) {
	req := store.PutRequest{Path: "/f", Writer: "b", Mode: 0o7644}
	for _, tc := range []struct {
		name    string
		r       *entryrec.Record
		sum     string
		status  store.PutStatus
		kind    store.EventKind
		updates uint64
	}{
		{"new", nil, "x", store.StatusCreated, store.EventCreated, 0},
		{"placeholder", file("", false), "x", store.StatusCreated, store.EventUpdated, 0},
		{"same content", file("x", true), "x", store.StatusUnchanged, store.EventUpdated, 0},
		{"other content", file("x", true), "y", store.StatusUpdated, store.EventUpdated, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, status, kind := entryrec.Put(tc.r, req, tc.sum, 3, t1)
			if status != tc.status || kind != tc.kind || next.Updates != tc.updates {
				t.Fatalf("status %v kind %v updates %d, want %v %v %d", status, kind, next.Updates, tc.status, tc.kind, tc.updates)
			}
			if !next.Present || next.SHA256 != tc.sum || next.Writer != "b" || next.Mode != 0o644 {
				t.Fatalf("record %+v", next)
			}
			if tc.status == store.StatusUnchanged && !next.MTime.Equal(t0) {
				t.Fatalf("unchanged content moved the mtime to %v", next.MTime)
			}
			if tc.status != store.StatusUnchanged && !next.MTime.Equal(t1) {
				t.Fatalf("new content has mtime %v, want the write's time", next.MTime)
			}
		})
	}
}

func TestDeclare(t *testing.T) {
	for _, tc := range []struct {
		name           string
		r              *entryrec.Record
		d              store.Declaration
		stale, changed bool
		present        bool
	}{
		{"new placeholder", nil, store.Declaration{Kind: store.KindFile, Size: 9}, false, true, false},
		{"same file", file("x", true), store.Declaration{Kind: store.KindFile, Size: -1, SHA256: "x"}, false, false, true},
		{"other hash", file("x", true), store.Declaration{Kind: store.KindFile, Size: -1, SHA256: "y"}, true, true, false},
		{"other size", file("x", true), store.Declaration{Kind: store.KindFile, Size: 4}, true, true, false},
		{"other mtime", file("x", true), store.Declaration{Kind: store.KindFile, Size: -1, MTime: t1}, true, true, false},
		{"placeholder, other hash", func() *entryrec.Record { r := file("", false); r.Declared = "x"; return r }(), store.Declaration{Kind: store.KindFile, Size: -1, SHA256: "y"}, true, true, false},
		{"placeholder, same hash", func() *entryrec.Record { r := file("", false); r.Declared = "x"; return r }(), store.Declaration{Kind: store.KindFile, Size: -1, SHA256: "x"}, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, stale, changed := entryrec.Declare(tc.r, tc.d, "a", "", t1)
			if stale != tc.stale || changed != tc.changed || next.Present != tc.present {
				t.Fatalf("stale %v changed %v present %v, want %v %v %v", stale, changed, next.Present, tc.stale, tc.changed, tc.present)
			}
			if !next.Present && tc.d.SHA256 != "" && next.Declared != tc.d.SHA256 {
				t.Fatalf("placeholder declared %q, has %q", tc.d.SHA256, next.Declared)
			}
			if changed && tc.r != nil && !next.Updated.Equal(t1) {
				t.Fatalf("a changed entry keeps Updated %v", next.Updated)
			}
		})
	}
}
