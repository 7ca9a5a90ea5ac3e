package nats

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// TestRecordStoredForm pins the JSON of an entry record: it is what every
// host of a depot reads from the tree bucket, so a change would make
// existing buckets unreadable (or be read differently by older hosts).
func TestRecordStoredForm(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	var r record
	r.Path, r.Kind, r.Ino, r.Size, r.SHA256, r.Declared, r.Mode = "/a/b", store.KindFile, 7, 42, "ab", "cd", 0o644
	r.MTime, r.Created, r.Updated, r.Expires = at, at.Add(time.Hour), at.Add(2*time.Hour), at.Add(3*time.Hour)
	r.Encoding, r.Source, r.Updates, r.Writer = "base64", "src", 3, "w"
	r.Pinned, r.Present, r.Explicit = true, true, true
	r.Revision, r.Rev = 99, 5
	var dir record
	dir.Path, dir.Kind = "/d", store.KindDir
	for _, tc := range []struct {
		r    record
		want string
	}{
		{r, `{"p":"/a/b","k":1,"i":7,"s":42,"h":"ab","dh":"cd","m":420,"mt":"2026-01-02T03:04:05.000000006Z","en":"base64","src":"src","c":"2026-01-02T04:04:05.000000006Z","u":"2026-01-02T05:04:05.000000006Z","n":3,"w":"w","x":"2026-01-02T06:04:05.000000006Z","pin":true,"pr":true,"ex":true,"r":5}`},
		{dir, `{"p":"/d","k":2,"i":0}`},
	} {
		b, err := json.Marshal(&tc.r)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("stored form\n got %s\nwant %s", b, tc.want)
		}
		back, err := decode[record]("e.x", b)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.r
		want.Revision = 0 // not stored
		if *back != want {
			t.Errorf("decoded\n got %+v\nwant %+v", *back, want)
		}
	}
}
