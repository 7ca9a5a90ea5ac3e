package archive_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/mcpserver/internal/archive"
)

// member is one member of a test archive.
type member struct {
	name string
	typ  byte
	data string
}

// makeTar returns the members as a tar stream.
func makeTar(t testing.TB, members ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range members {
		h := &tar.Header{Name: m.name, Typeflag: m.typ, Mode: 0o640, Size: int64(len(m.data)), ModTime: time.Unix(1714564800, 0)}
		switch m.typ {
		case tar.TypeXGlobalHeader:
			h = &tar.Header{Typeflag: m.typ, PAXRecords: map[string]string{"comment": "a commit id"}}
		case tar.TypeDir, tar.TypeSymlink:
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, m.data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gz compresses b.
func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// makeZip returns the members (files, and directories named with a
// trailing slash) as a zip archive.
func makeZip(t testing.TB, members ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range members {
		// Stored, not deflated, so a test can damage a member's bytes.
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, m.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads every entry of the archive b, returning "name=content"
// (or "name/" for a directory) for each and the error that ended it.
func readAll(b []byte, f archive.Format) ([]string, error) {
	r, err := archive.NewReader(bytes.NewReader(b), int64(len(b)), f)
	if err != nil {
		return nil, err
	}
	var got []string
	for {
		e, c, err := r.Next()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		if e.Dir {
			got = append(got, strings.TrimSuffix(e.Name, "/")+"/")
			continue
		}
		data, err := io.ReadAll(c)
		if err != nil {
			return got, err
		}
		got = append(got, e.Name+"="+string(data))
	}
}

// repeatedZip returns a zip of n members whose directory entries all
// point at the one deflated member of zip b (as zip.Writer writes it, with
// no comment): n directory records renamed m0000, m0001, ...
func repeatedZip(t testing.TB, b []byte, n int) []byte {
	t.Helper()
	eocd := b[len(b)-22:]
	cdSize, cdOff := binary.LittleEndian.Uint32(eocd[12:]), binary.LittleEndian.Uint32(eocd[16:])
	rec := b[cdOff : cdOff+cdSize]
	nameLen := int(binary.LittleEndian.Uint16(rec[28:]))
	out := append([]byte(nil), b[:cdOff]...)
	for i := range n {
		r := append([]byte(nil), rec...)
		copy(r[46:46+nameLen], fmt.Sprintf("%0*d", nameLen, i))
		out = append(out, r...)
	}
	end := append([]byte(nil), eocd...)
	binary.LittleEndian.PutUint16(end[8:], uint16(n))
	binary.LittleEndian.PutUint16(end[10:], uint16(n))
	binary.LittleEndian.PutUint32(end[12:], uint32(n)*cdSize)
	return append(out, end...)
}

// deflated returns a zip of one deflated member holding size zeros.
func deflated(t testing.TB, name string, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, size))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zeroCRC returns zip b with every CRC-32 its directory and local headers
// record set to 0, which archive/zip takes for "not recorded".
func zeroCRC(t testing.TB, b []byte) []byte {
	t.Helper()
	out := append([]byte(nil), b...)
	for _, sig := range [][]byte{{'P', 'K', 3, 4}, {'P', 'K', 1, 2}} {
		at := 14 // the CRC-32's offset in a local header
		if sig[2] == 1 {
			at = 16 // and in a directory record
		}
		for i := 0; ; {
			j := bytes.Index(out[i:], sig)
			if j < 0 {
				break
			}
			binary.LittleEndian.PutUint32(out[i+j+at:], 0)
			i += j + 4
		}
	}
	return out
}

func TestReader(t *testing.T) {
	files := []member{{"a.txt", tar.TypeReg, "alpha"}, {"d/", tar.TypeDir, ""}, {"d/b.txt", tar.TypeReg, "beta"}}
	want := "a.txt=alpha d/ d/b.txt=beta"
	good := makeTar(t, files...)
	withGlobal := makeTar(t, append([]member{{"pax_global_header", tar.TypeXGlobalHeader, ""}}, files...)...)
	badSum := gz(t, good)
	badSum[len(badSum)-6] ^= 0xff // in the CRC-32 of the gzip trailer
	zipped := makeZip(t, member{"a.txt", 0, "alpha"}, member{"d/", 0, ""}, member{"d/b.txt", 0, "beta"})
	badCRC := bytes.Replace(zipped, []byte("alpha"), []byte("alphb"), 1)

	tests := []struct {
		name    string
		format  archive.Format
		data    []byte
		want    string
		wantErr error  // nil: the archive reads whole
		member  string // the member the error names
	}{
		{"tar", archive.Tar, good, want, nil, ""},
		{"tar.gz", archive.TarGz, gz(t, good), want, nil, ""},
		{"pax global header", archive.Tar, withGlobal, want, nil, ""},
		{"zip", archive.Zip, zipped, want, nil, ""},
		{"tar without its end marker", archive.Tar, good[:len(good)-1024], want, archive.ErrDamaged, "d/b.txt"},
		{"tar cut in a member", archive.Tar, good[:512*4+2], "a.txt=alpha d/", archive.ErrDamaged, "d/b.txt"},
		{"tar cut in its end marker", archive.Tar, good[:512*5+2], want, archive.ErrDamaged, "d/b.txt"},
		{"tar cut in a header", archive.Tar, good[:512*3+100], "a.txt=alpha d/", archive.ErrDamaged, "d/"},
		{"tar.gz cut short", archive.TarGz, gz(t, good)[:40], "", archive.ErrDamaged, ""},
		{"tar.gz with a bad checksum", archive.TarGz, badSum, want, archive.ErrDamaged, ""},
		{"not gzip", archive.TarGz, good, "", archive.ErrDamaged, ""},
		{"zip with a bad CRC", archive.Zip, badCRC, "", archive.ErrDamaged, "a.txt"},
		{"zip with a bad CRC recorded as 0", archive.Zip, zeroCRC(t, zipped), "", archive.ErrDamaged, "a.txt"},
		{"zip repeating one deflated member", archive.Zip, repeatedZip(t, deflated(t, "m0", 1<<20), 20), "", archive.ErrDamaged, "01"},
		{"zip with a member past its end", archive.Zip, pastEnd(t, zipped), "", archive.ErrDamaged, "d/b.txt"},
		{"not a zip", archive.Zip, good, "", archive.ErrDamaged, ""},
		{"symlink", archive.Tar, makeTar(t, member{"a.txt", tar.TypeReg, "alpha"}, member{"link", tar.TypeSymlink, ""}), "a.txt=alpha", archive.ErrUnsupported, "link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(tt.data, tt.format)
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("read %.200q, want %q", g, tt.want)
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			var ae *archive.Error
			if !errors.Is(err, tt.wantErr) || !errors.As(err, &ae) || ae.Member != tt.member || ae.Format != tt.format {
				t.Fatalf("error %v (%#v), want %v naming member %q", err, ae, tt.wantErr, tt.member)
			}
		})
	}
}

// pastEnd returns zip b with its last member's compressed size, in its
// directory record, made larger than the archive.
func pastEnd(t testing.TB, b []byte) []byte {
	t.Helper()
	out := append([]byte(nil), b...)
	i := bytes.LastIndex(out, []byte{'P', 'K', 1, 2})
	binary.LittleEndian.PutUint32(out[i+20:], uint32(len(b)))
	binary.LittleEndian.PutUint32(out[i+24:], uint32(len(b)))
	return out
}

// TestZipSkippedMemberChecked: reading only the entries of a zip, never
// their content (as a first pass over an upload does), still finds a
// member whose content fails its CRC-32, in the call after its entry.
func TestZipSkippedMemberChecked(t *testing.T) {
	zipped := makeZip(t, member{"a.txt", 0, "alpha"}, member{"b.txt", 0, "beta"})
	bad := bytes.Replace(zipped, []byte("alpha"), []byte("alphb"), 1)
	for _, tt := range []struct {
		name string
		data []byte
		want int // the entries Next returns before it fails; -1: none fails
	}{{"whole", zipped, -1}, {"damaged", bad, 1}, {"damaged, CRC recorded as 0", zeroCRC(t, bad), 1}} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := archive.NewReader(bytes.NewReader(tt.data), int64(len(tt.data)), archive.Zip)
			if err != nil {
				t.Fatal(err)
			}
			for n := 0; ; n++ {
				_, _, err := r.Next()
				if errors.Is(err, io.EOF) {
					if tt.want >= 0 {
						t.Fatalf("read %d entries to the end, want an error after %d", n, tt.want)
					}
					return
				}
				if err != nil {
					var ae *archive.Error
					if n != tt.want || !errors.Is(err, archive.ErrDamaged) || !errors.As(err, &ae) || ae.Member != "a.txt" {
						t.Fatalf("after %d entries: %v, want ErrDamaged naming a.txt after %d", n, err, tt.want)
					}
					return
				}
			}
		})
	}
}

// TestErrorClipsName: a member name a client made huge is clipped in the
// error text, which reaches the log and the reply.
func TestErrorClipsName(t *testing.T) {
	long := strings.Repeat("n", 900_000)
	err := &archive.Error{Format: archive.Tar, Member: long, Err: archive.ErrUnsupported}
	if n := len(err.Error()); n > 1024 {
		t.Errorf("the error text is %d bytes", n)
	}
}

// fuzzRead reads every entry of data as format and checks what any input
// must keep: no panic, every error an *Error, and no member yielding more
// content than it declares.
func fuzzRead(t *testing.T, data []byte, format archive.Format) {
	r, err := archive.NewReader(bytes.NewReader(data), int64(len(data)), format)
	var ae *archive.Error
	if err != nil {
		if !errors.As(err, &ae) {
			t.Fatalf("NewReader: %v is not an *archive.Error", err)
		}
		return
	}
	for range 10_000 {
		e, c, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			if !errors.As(err, &ae) {
				t.Fatalf("Next: %v is not an *archive.Error", err)
			}
			return
		}
		if e.Dir != (c == nil) || e.Size < 0 {
			t.Fatalf("entry %+v with content %v", e, c != nil)
		}
		if c == nil {
			continue
		}
		n, err := io.Copy(io.Discard, io.LimitReader(c, e.Size+1))
		if n > e.Size {
			t.Fatalf("member %q declares %d bytes and yields more", e.Name, e.Size)
		}
		if err != nil && !errors.As(err, &ae) {
			t.Fatalf("reading %q: %v is not an *archive.Error", e.Name, err)
		}
	}
}

// zipWhole checks what a zip the reader took whole must be: every member
// read, and no byte of the archive the data of two members, so that the
// members' compressed bytes add up to no more than the archive.
func zipWhole(t *testing.T, data []byte) {
	r, err := archive.NewReader(bytes.NewReader(data), int64(len(data)), archive.Zip)
	if err != nil {
		return
	}
	for {
		_, _, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return
		}
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("read whole, yet archive/zip refuses it: %v", err)
	}
	var sum uint64
	for _, zf := range zr.File {
		sum += zf.CompressedSize64
	}
	if sum > uint64(len(data)) {
		t.Fatalf("read whole, yet its %d members hold %d compressed bytes in %d", len(zr.File), sum, len(data))
	}
}

func FuzzTar(f *testing.F) {
	f.Add(makeTar(f, member{"a.txt", tar.TypeReg, "alpha"}, member{"d/", tar.TypeDir, ""}))
	f.Add(makeTar(f, member{"g", tar.TypeXGlobalHeader, ""}, member{"l", tar.TypeSymlink, ""}))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, archive.Tar) })
}

func FuzzTarGz(f *testing.F) {
	f.Add(gz(f, makeTar(f, member{"a.txt", tar.TypeReg, "alpha"}, member{"d/", tar.TypeDir, ""})))
	f.Add(gz(f, []byte("not a tar")))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, archive.TarGz) })
}

func FuzzZip(f *testing.F) {
	zipped := makeZip(f, member{"a.txt", 0, "alpha"}, member{"d/", 0, ""}, member{"d/b", 0, strings.Repeat("b", 1000)})
	f.Add(zipped)
	f.Add(zeroCRC(f, zipped))
	f.Add(repeatedZip(f, deflated(f, "m0", 4096), 3))
	f.Add(deflated(f, "one", 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, archive.Zip)
		zipWhole(t, data)
	})
}
