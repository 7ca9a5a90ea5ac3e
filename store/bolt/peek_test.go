package bolt

import "testing"

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
