package integration_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// storeStats returns guide_cache_stats' store counts.
func storeStats(t testing.TB, d *daemon) map[string]any {
	t.Helper()
	st, _ := d.mustCall("guide_cache_stats", map[string]any{}).Data["store"].(map[string]any)
	if st == nil {
		t.Fatal("guide_cache_stats has no store counts")
	}
	return st
}

// serverHWM returns the peak resident memory of the daemon, in bytes.
func serverHWM(t testing.TB, d *daemon) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// fileSize returns the size of the file at p.
func fileSize(t testing.TB, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// tarStream writes a tar (gzip-compressed with gz) of n files of size
// bytes each, distinct (each starts with its name), to w.
func tarStream(t testing.TB, w io.Writer, gz bool, n int, size int64) {
	t.Helper()
	out := w
	var zw *gzip.Writer
	if gz {
		// The fastest level: the server reads any level alike, and the
		// default spent minutes of this test's CPU on the bombs' zeros.
		zw, _ = gzip.NewWriterLevel(w, gzip.BestSpeed)
		out = zw
	}
	tw := tar.NewWriter(out)
	zeros := make([]byte, 1<<20)
	for i := range n {
		name := fmt.Sprintf("f%06d.bin", i)
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
			t.Fatal(err)
		}
		left := size
		if size > 0 {
			k, _ := io.WriteString(tw, name)
			left -= int64(k)
		}
		for left > 0 {
			k, err := tw.Write(zeros[:min(left, int64(len(zeros)))])
			if err != nil {
				t.Fatal(err)
			}
			left -= int64(k)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// emptyMembers returns a tar of n empty files named as tarStream names
// them, byte for byte what tarStream writes: each member is a copy of the
// first's header with its name's digits and its checksum rewritten. The
// race detector does not watch it (go:norace; out is its own until it
// returns): archive/tar and gzip, watched, took 20 s of CPU for 100,001
// members under -race, and this takes well under a second.
//
//go:norace
func emptyMembers(t testing.TB, n int) []byte {
	t.Helper()
	const block = 512
	if n > 1_000_000 {
		t.Fatalf("emptyMembers(%d): names have six digits", n)
	}
	var first bytes.Buffer
	if err := tar.NewWriter(&first).WriteHeader(&tar.Header{Name: "f000000.bin", Typeflag: tar.TypeReg, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	hdr := first.Bytes()[:block]
	// The checksum is the sum of the header's bytes with the checksum
	// field (148-155) read as spaces; base leaves out the name's digits
	// (1-6), added per member.
	base := 0
	for i, c := range hdr {
		switch {
		case i >= 148 && i < 156:
			base += ' '
		case i < 1 || i >= 7:
			base += int(c)
		}
	}
	out := make([]byte, (n+2)*block) // the members, then two zero blocks
	for i := range n {
		h := out[i*block : (i+1)*block]
		copy(h, hdr)
		sum := base
		for k, v := 6, i; k >= 1; k, v = k-1, v/10 {
			h[k] = byte('0' + v%10)
			sum += int(h[k])
		}
		for k, v := 153, sum; k >= 148; k, v = k-1, v/8 { // six octal digits, NUL, space
			h[k] = byte('0' + v%8)
		}
		h[154], h[155] = 0, ' '
	}
	return out
}

// TestEmptyMembers: emptyMembers writes what tarStream writes, which a
// tar reader reads back.
func TestEmptyMembers(t *testing.T) {
	t.Parallel()
	const n = 1001
	var want bytes.Buffer
	tarStream(t, &want, false, n, 0)
	got := emptyMembers(t, n)
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("emptyMembers(%d): %d bytes, differing from tarStream's %d", n, len(got), want.Len())
	}
	tr := tar.NewReader(bytes.NewReader(got))
	for i := range n {
		h, err := tr.Next()
		if err != nil || h.Name != fmt.Sprintf("f%06d.bin", i) || h.Size != 0 {
			t.Fatalf("member %d: %+v, %v", i, h, err)
		}
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Fatalf("after %d members: %v, want io.EOF", n, err)
	}
}

// overlappingZip returns a zip of n members whose directory entries all
// point to the one deflated member of size zero bytes: a few KiB that
// decompress to n*size bytes.
func overlappingZip(t testing.TB, n int, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("m0000")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, size))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	eocd := b[len(b)-22:]
	cdSize, cdOff := binary.LittleEndian.Uint32(eocd[12:]), binary.LittleEndian.Uint32(eocd[16:])
	rec := b[cdOff : cdOff+cdSize]
	out := append([]byte(nil), b[:cdOff]...)
	for i := range n {
		r := append([]byte(nil), rec...)
		copy(r[46:], fmt.Sprintf("m%04d", i))
		out = append(out, r...)
	}
	end := append([]byte(nil), eocd...)
	binary.LittleEndian.PutUint16(end[8:], uint16(n))
	binary.LittleEndian.PutUint16(end[10:], uint16(n))
	binary.LittleEndian.PutUint32(end[12:], uint32(n)*cdSize)
	return append(out, end...)
}

// TestArchiveOverBudgetRefused: an archive that unpacks to more than the
// store can take is refused as soon as its members' declared sizes cross
// that, before anything is stored or evicted: a tar.gz of 32 distinct
// files of a store's eighth (128 in a soak) and a tar of 10 files of
// just over a store's tenth, and a tar of 100,001 empty members (a zip of
// overlapping members is refused as damaged: TestZipCheckedWhole). The
// store is 8 MiB (64 MiB in a soak): the refusals depend on the members'
// sizes against it, not on its size. The depot,
// its evictions and the database's size are unchanged.
func TestArchiveOverBudgetRefused(t *testing.T) {
	t.Parallel()
	storeSize := bySoak[int64](8<<20, 64<<20)
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-store-size", fmt.Sprint(storeSize), "--max-file-size", fmt.Sprint(storeSize / 4)}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/keep/a.txt", "content": "kept"})

	var bomb, big bytes.Buffer
	bombs := bySoak(32, 128)
	tarStream(t, &bomb, true, bombs, storeSize/8)
	tarStream(t, &big, false, 10, storeSize/64*7)
	tests := []struct {
		name, format string
		body         []byte
		want         string
	}{
		{fmt.Sprintf("%d x 1/8 store tar.gz", bombs), "tar.gz", bomb.Bytes(), "unpacks to more than"},
		{"10 x 7/64 store tar", "tar", big.Bytes(), "unpacks to more than"},
		{"100,001 members", "tar", emptyMembers(t, 100_001), "more than 100000 members"},
	}
	before := snapshot(t, d.mount)
	stats := storeStats(t, d)
	dbSize := fileSize(t, d.db)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := beginUpload(t, d, map[string]any{"path": "/unpacked", "format": tt.format})
			start := time.Now()
			r := put(t, u, bytes.NewReader(tt.body), int64(len(tt.body)), "")
			took := time.Since(start)
			if r.Status != http.StatusRequestEntityTooLarge || r.Env.Success || r.Env.Error.Type != "limit" || !strings.Contains(r.Env.Error.Message, tt.want) {
				t.Fatalf("PUT: %d %+v, want 413 limit saying %q", r.Status, r.Env.Error, tt.want)
			}
			t.Logf("%s: %d bytes sent, refused in %v (%q); server peak RSS %d MiB", tt.name, len(tt.body), took.Round(time.Millisecond), r.Env.Error.Message, serverHWM(t, d)>>20)
		})
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused archives changed the mount:\n%s", diff)
	}
	after := storeStats(t, d)
	if after["evictions"] != stats["evictions"] || after["files"] != stats["files"] {
		t.Errorf("store counts went from %v to %v; want nothing evicted or stored", stats, after)
	}
	if grown := fileSize(t, d.db) - dbSize; grown > 8<<20 {
		t.Errorf("depot.db grew by %d bytes for refused archives", grown)
	}
}

// TestArchiveWithinBudget: an archive that fits is stored whole, and a
// store holding other files evicts those, never the archive's own.
func TestArchiveWithinBudget(t *testing.T) {
	t.Parallel()
	storeSize := bySoak[int64](16<<20, 64<<20)
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-store-size", fmt.Sprint(storeSize), "--max-file-size", fmt.Sprint(storeSize / 4)}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/old/a.bin", "content": strings.Repeat("o", 1<<20)})
	var b bytes.Buffer
	member := storeSize / 8
	tarStream(t, &b, true, 6, member)
	u := beginUpload(t, d, map[string]any{"path": "/tree", "format": "tar.gz"})
	if r := put(t, u, bytes.NewReader(b.Bytes()), int64(b.Len()), ""); !r.Env.Success {
		t.Fatalf("PUT of 6 x %d bytes into %d: %d %+v", member, storeSize, r.Status, r.Env.Error)
	}
	for i := range 6 {
		if fi, err := os.Stat(d.path(fmt.Sprintf("/tree/f%06d.bin", i))); err != nil || fi.Size() != int64(member) {
			t.Errorf("member %d: %v, %v", i, fi, err)
		}
	}
}
