package bolt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/depotfs/depotfs/store"
	bbolt "go.etcd.io/bbolt"
)

// FuzzPeekRecord: peekRecord accepts exactly the records that decode, and
// reads the same kind, inode number and revision from them.
func FuzzPeekRecord(f *testing.F) {
	addSampleRecords(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		kind, ino, rev, perr := peekRecord(b)
		r, err := decodeRecord(b, sealer{})
		if (perr == nil) != (err == nil) {
			t.Fatalf("peekRecord: %v; decodeRecord: %v", perr, err)
		}
		if err == nil && (kind != r.Kind || ino != r.Ino || rev != r.Revision) {
			t.Fatalf("peekRecord: %v %d %d; decoded %+v", kind, ino, rev, r)
		}
	})
}

// TestPeekRecordAgreesWithDecode is FuzzPeekRecord's property over every
// sample record cut short and with each byte replaced by values that end,
// continue or overflow a varint, or change a marker: peekRecord refuses
// exactly what decodeRecord refuses, and reads what it decodes.
func TestPeekRecordAgreesWithDecode(t *testing.T) {
	for _, r := range sampleRecords() {
		b, err := encodeRecord(&r, sealer{})
		if err != nil {
			t.Fatal(err)
		}
		check := func(v []byte) {
			t.Helper()
			kind, ino, rev, perr := peekRecord(v)
			d, err := decodeRecord(v, sealer{})
			if (perr == nil) != (err == nil) {
				t.Fatalf("%x: peekRecord: %v; decodeRecord: %v", v, perr, err)
			}
			if err == nil && (kind != d.Kind || ino != d.Ino || rev != d.Revision) {
				t.Fatalf("%x: peekRecord: %v %d %d; decoded %+v", v, kind, ino, rev, d)
			}
		}
		check(b)
		for n := range len(b) {
			check(b[:n])
		}
		for i := range b {
			for _, x := range []byte{0, 1, 2, 0x7f, 0x80, 0xff, b[i] ^ 1} {
				v := append([]byte(nil), b...)
				v[i] = x
				check(v)
			}
		}
	}
}

// TestListRefusesCorruptRecord: a listing with a child whose record does
// not decode fails, as ReadDir does, whatever the children before it.
func TestListRefusesCorruptRecord(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	var reqs []store.PutRequest
	for i := range 50 {
		reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/d/f%02d", i), Data: []byte{byte(i)}})
	}
	if _, err := s.PutBatch(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if l, err := s.List(ctx, "/d"); err != nil || l.Len() != 50 {
		t.Fatalf("List: %v", err)
	}
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketTree).Put(treeKey("/d/f40"), []byte{recordFormat, byte(store.KindFile), 0, 0x80})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "/d"); !errors.Is(err, errCorrupt) {
		t.Errorf("List with a corrupt child: %v, want %v", err, errCorrupt)
	}
	if _, err := s.ReadDir(ctx, "/d"); err == nil {
		t.Error("ReadDir with a corrupt child: no error")
	}
}
