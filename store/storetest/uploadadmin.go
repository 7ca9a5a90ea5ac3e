package storetest

import (
	"errors"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// testUploadAdmin checks store.UploadAdmin, for a store that has it: the
// uploads in progress and completed are listed with their progress, and
// an operator's drop by id or by idle time deletes exactly those that
// qualify, frees their room in Stats, and leaves the rest alone.
func testUploadAdmin(t *testing.T, open Opener) {
	clk := newClock()
	s := open(t, Config{Now: clk.Now})
	admin, ok := s.(store.UploadAdmin)
	if !ok {
		t.Skip("the store does not implement store.UploadAdmin")
	}
	ctx := t.Context()
	list := func() []store.UploadInfo {
		t.Helper()
		ups, err := admin.ListUploads(ctx)
		if err != nil {
			t.Fatalf("ListUploads: %v", err)
		}
		return ups
	}
	ids := func(ups []store.UploadInfo) []string {
		var out []string
		for _, u := range ups {
			out = append(out, u.ID)
		}
		return out
	}
	if ups := list(); len(ups) != 0 {
		t.Fatalf("a new store lists uploads %+v", ups)
	}

	// a: 1 of 3 chunks, then abandoned; b: 1 of 3, then 10 minutes later
	// another; c: complete (kept for retries).
	start := clk.Now()
	aData, bData, cData := content(3000, 1), content(2000, 2), content(100, 3)
	aFile := store.PutRequest{Path: "/up/a", SHA256: Sum(aData)}
	bFile := store.PutRequest{Path: "/up/b", SHA256: Sum(bData)}
	cFile := store.PutRequest{Path: "/up/c", SHA256: Sum(cData)}
	putChunk := func(c store.Chunk) {
		t.Helper()
		if _, err := s.PutChunk(ctx, c); err != nil {
			t.Fatalf("chunk %d of %s: %v", c.Index, c.UploadID, err)
		}
	}
	aParts, bParts := split(aData, 3), split(bData, 3)
	ac := chunk("a", aParts, 0, aFile)
	ac.TotalSize = int64(len(aData))
	putChunk(ac)
	clk.Advance(time.Second)
	putChunk(chunk("b", bParts, 0, bFile))
	clk.Advance(time.Second)
	putChunk(store.Chunk{UploadID: "c", Count: 1, Data: cData, File: cFile})

	ups := list()
	if got := ids(ups); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("ListUploads ids %v; want [a b c], oldest first", got)
	}
	want := store.UploadInfo{ID: "a", Path: "/up/a", Received: 1, Count: 3, Bytes: int64(len(aParts[0])), Total: int64(len(aData)), Started: start, Last: start}
	if a := ups[0]; a.ID != want.ID || a.Path != want.Path || a.Received != want.Received || a.Count != want.Count ||
		a.Bytes != want.Bytes || a.Total != want.Total || !a.Started.Equal(start) || !a.Last.Equal(start) || a.Complete {
		t.Errorf("upload a listed as %+v; want %+v", a, want)
	}
	if b := ups[1]; b.Received != 1 || b.Count != 3 || b.Complete {
		t.Errorf("upload b listed as %+v", b)
	}
	if c := ups[2]; !c.Complete || c.Received != 1 || c.Path != "/up/c" {
		t.Errorf("completed upload c listed as %+v", c)
	}

	clk.Advance(10 * time.Minute)
	putChunk(chunk("b", bParts, 1, bFile)) // b is not idle
	if _, err := admin.DropUploads(ctx, nil, -time.Second); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("DropUploads with a negative idle time: %v; want fs.ErrInvalid", err)
	}
	// By idle time: a and c idled 10 minutes, b received a chunk now.
	dropped, err := admin.DropUploads(ctx, []string{"a", "b", "nope"}, 5*time.Minute)
	if err != nil {
		t.Fatalf("DropUploads(a, b, nope; 5m): %v", err)
	}
	if got := ids(dropped); !slices.Equal(got, []string{"a"}) {
		t.Errorf("DropUploads(a, b, nope; 5m) dropped %v; want [a]", got)
	}
	if got := ids(list()); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("after dropping a, ListUploads %v; want [b c]", got)
	}
	if st, want := stats(t, s), int64(len(bParts[0])+len(bParts[1])); st.Uploads != 1 || st.UploadBytes != want {
		t.Errorf("Stats after dropping a: %d uploads, %d bytes; want 1, %d", st.Uploads, st.UploadBytes, want)
	}
	// Every upload, however recent.
	dropped, err = admin.DropUploads(ctx, nil, 0)
	if err != nil {
		t.Fatalf("DropUploads(all; 0): %v", err)
	}
	if got := ids(dropped); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("DropUploads(all; 0) dropped %v; want [b c]", got)
	}
	if ups := list(); len(ups) != 0 {
		t.Errorf("after dropping all, ListUploads %+v", ups)
	}
	if st := stats(t, s); st.Uploads != 0 || st.UploadBytes != 0 {
		t.Errorf("Stats after dropping all: %d uploads, %d bytes", st.Uploads, st.UploadBytes)
	}
	if _, err := s.Stat(ctx, "/up/c"); err != nil {
		t.Errorf("dropping a completed upload removed its file: %v", err)
	}
	// A dropped upload starts anew with its next chunk, and completes.
	for i := range aParts {
		putChunk(chunk("a", aParts, i, aFile))
	}
	if got := read(t, s, "/up/a"); !slices.Equal(got, aData) {
		t.Error("an upload started anew after a drop reads wrong")
	}
}
