package bolt

import (
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
)

func sampleRecords() []record {
	t := time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC)
	return []record{
		{Kind: store.KindDir, Ino: 2, Created: t, Updated: t, Revision: 1},
		{Kind: store.KindDir, Ino: 1 << 40, Explicit: true, Mode: 0o755, Revision: 1 << 50},
		{Kind: store.KindFile, Ino: 3, Size: 1 << 33, SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			Mode: 0o644, MTime: time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), Encoding: "utf-8", Source: "guide_cache_file:ü",
			Created: t, Updated: t.Add(time.Hour), Updates: 7, Writer: "agent", Expires: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
			Pinned: true, Present: true, Revision: 9},
		{Kind: store.KindFile, Ino: 4, Size: 42, MTime: time.Unix(-1, 5).UTC(), Revision: 2},
		{Kind: store.KindFile, Ino: 5, Size: 3, Declared: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", Revision: 3},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range sampleRecords() {
		b, err := encodeRecord(&r, sealer{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(b, sealer{})
		if err != nil {
			t.Fatalf("decode(%+v): %v", r, err)
		}
		if *got != r {
			t.Errorf("round trip:\n got %+v\nwant %+v", *got, r)
		}
		for n := range len(b) {
			if _, err := decodeRecord(b[:n], sealer{}); err == nil {
				t.Errorf("a record cut to %d of %d bytes decoded", n, len(b))
			}
		}
	}
	if _, err := encodeRecord(&record{Kind: store.KindFile, SHA256: "not hex"}, sealer{}); err == nil {
		t.Error("a record with a bad hash encoded")
	}
}

// addSampleRecords seeds f with the encoded sample records.
func addSampleRecords(f *testing.F) {
	for _, r := range sampleRecords() {
		b, err := encodeRecord(&r, sealer{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzDecodeRecord: records come from disk, so decoding any bytes must fail
// cleanly or yield a record that encodes back to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	addSampleRecords(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b, sealer{})
		if err != nil {
			return
		}
		again, err := encodeRecord(r, sealer{})
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", r, err)
		}
		if r2, err := decodeRecord(again, sealer{}); err != nil || *r2 != *r {
			t.Fatalf("re-encoded record decodes to %+v, %v; want %+v", r2, err, r)
		}
	})
}

// FuzzDecodeVersion: a version value decodes or fails, never panics, and
// what decodes encodes back to the same version.
func FuzzDecodeVersion(f *testing.F) {
	for _, r := range sampleRecords() {
		b, err := encodeVersion(rules.Version{Path: "/d/f", Rec: &r, Until: r.Revision + 1, Held: true}, sealer{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	k := versionKey("/d/f", 7)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeVersion(k, b, sealer{})
		if err != nil {
			return
		}
		again, err := encodeVersion(v, sealer{})
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", v, err)
		}
		if w, err := decodeVersion(k, again, sealer{}); err != nil || w.Until != v.Until || w.Held != v.Held || w.Path != "/d/f" || *w.Rec != *v.Rec {
			t.Fatalf("re-encoded version decodes to %+v, %v; want %+v", w, err, v)
		}
	})
}
