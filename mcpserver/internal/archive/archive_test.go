package archive_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
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
		{"not a zip", archive.Zip, good, "", archive.ErrDamaged, ""},
		{"symlink", archive.Tar, makeTar(t, member{"a.txt", tar.TypeReg, "alpha"}, member{"link", tar.TypeSymlink, ""}), "a.txt=alpha", archive.ErrUnsupported, "link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(tt.data, tt.format)
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("read %q, want %q", g, tt.want)
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
	f.Add(makeZip(f, member{"a.txt", 0, "alpha"}, member{"d/", 0, ""}, member{"d/b", 0, strings.Repeat("b", 1000)}))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, archive.Zip) })
}
