package integration_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// randomZip returns a zip of n stored (not compressed) members of size
// pseudo-random bytes each, m0000.bin, m0001.bin, ...
func randomZip(t testing.TB, n, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("m%04d.bin", i), Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(pseudoRandom(size, uint64(1000+i)))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestZipCheckedWhole: a zip is checked whole before the store sees a
// byte of it, as a tar.gz is: a zip whose last member fails its CRC-32
// and a zip whose directory names one deflated member twenty times (a few
// KiB that inflate to 20 members' worth) are refused with a validation
// error naming the member, and the depot and the database's size are
// unchanged (the database grew by what a stager wrote before: hundreds of
// MiB in a soak). A whole zip of the same shape is stored.
func TestZipCheckedWhole(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/keep/a.txt", "content": "kept"})

	members, size := 4, bySoak(4<<20, 64<<20)
	good := randomZip(t, members, size)
	badCRC := append([]byte(nil), good...)
	last := pseudoRandom(size, uint64(1000+members-1))
	at := bytes.Index(badCRC, last[:64]) // the last member's data
	if at < 0 {
		t.Fatal("the last member's data is not in the zip")
	}
	badCRC[at+size/2] ^= 0xff
	repeats, each := 20, bySoak(8<<20, 32<<20)
	repeated := overlappingZip(t, repeats, each)

	before := snapshot(t, d.mount)
	stats := storeStats(t, d)
	for _, tt := range []struct {
		name   string
		body   []byte
		member string
		want   string
	}{
		{fmt.Sprintf("%d x %d MiB with a bad CRC in the last", members, size>>20), badCRC, fmt.Sprintf("m%04d.bin", members-1), "checksum"},
		{fmt.Sprintf("one %d MiB member named %d times", each>>20, repeats), repeated, "m0001", "overlaps"},
	} {
		dbSize := fileSize(t, d.db)
		u := beginUpload(t, d, map[string]any{"path": "/unpacked", "format": "zip"})
		r := put(t, u, bytes.NewReader(tt.body), int64(len(tt.body)), "")
		grown := fileSize(t, d.db) - dbSize
		t.Logf("%s: %d bytes sent; %d %s; depot.db grew by %d bytes", tt.name, len(tt.body), r.Status, errText(r.Env), grown)
		if r.Status != http.StatusBadRequest || r.Env.Success || r.Env.Error.Type != "validation" ||
			!strings.Contains(r.Env.Error.Message, fmt.Sprintf("%q", tt.member)) || !strings.Contains(r.Env.Error.Message, tt.want) {
			t.Errorf("%s: PUT %d %+v, want 400 validation naming member %q and saying %q", tt.name, r.Status, r.Env.Error, tt.member, tt.want)
		}
		if grown > 1<<20 {
			t.Errorf("%s: depot.db grew by %d bytes for a refused zip", tt.name, grown)
		}
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused zips changed the mount:\n%s", diff)
	}
	if after := storeStats(t, d); after["files"] != stats["files"] || after["stored_bytes"] != stats["stored_bytes"] {
		t.Errorf("store counts went from %v to %v; want nothing stored", stats, after)
	}

	u := beginUpload(t, d, map[string]any{"path": "/unpacked", "format": "zip"})
	if r := put(t, u, bytes.NewReader(good), int64(len(good)), ""); !r.Env.Success {
		t.Fatalf("a whole zip: %d %+v", r.Status, r.Env.Error)
	}
	for i := range members {
		if got := fileSize(t, d.path(fmt.Sprintf("/unpacked/m%04d.bin", i))); got != int64(size) {
			t.Errorf("member %d stored with %d bytes, want %d", i, got, size)
		}
	}
}

// errText is an envelope's error message, or "ok".
func errText(env envelope) string {
	if env.Error == nil {
		return "ok"
	}
	return env.Error.Type + ": " + env.Error.Message
}
