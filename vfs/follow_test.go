package vfs_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// statOf returns the stat of an open file.
func statOf(t *testing.T, f *os.File) syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// listedIno returns the inode number the listing of dir shows for name
// (d_ino, which ls -i and find -inum read without a stat).
func listedIno(t *testing.T, dir, name string) uint64 {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 1<<16)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("%s is not listed in %s", name, dir)
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: d_ino, d_off, d_reclen, d_type, d_name.
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			if got, _, _ := bytes.Cut(b[19:reclen], []byte{0}); string(got) == name {
				return binary.NativeEndian.Uint64(b)
			}
			b = b[reclen:]
		}
	}
}

// TestVersionsThatKeepTheInode checks which updates keep a file's inode:
// an append (the open file then reads what was added, and fstat says the
// new size) and a change of mode alone do; other content is a new inode,
// and the open file's link count drops to 0 while it keeps reading its own
// version. A listing shows the inode number stat shows.
func TestVersionsThatKeepTheInode(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	put(t, st, m, store.PutRequest{Path: "/log", Data: []byte("one\n")})
	f, err := os.Open(m.path("/log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "one\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	first := statOf(t, f)

	steps := []struct {
		name      string
		req       store.PutRequest
		sameIno   bool
		nlink     uint64
		readsMore string // what the open file reads next
	}{
		{"append", store.PutRequest{Path: "/log", Data: []byte("one\ntwo\n")}, true, 1, "two\n"},
		{"mode only", store.PutRequest{Path: "/log", Data: []byte("one\ntwo\n"), Mode: 0o400}, true, 1, ""},
		{"append again", store.PutRequest{Path: "/log", Data: []byte("one\ntwo\nthree\n"), Mode: 0o400}, true, 1, "three\n"},
		{"other content", store.PutRequest{Path: "/log", Data: []byte("replaced\n")}, false, 0, ""},
	}
	for _, s := range steps {
		put(t, st, m, s.req)
		var path syscall.Stat_t
		if err := syscall.Stat(m.path("/log"), &path); err != nil {
			t.Fatal(err)
		}
		if same := path.Ino == first.Ino; same != s.sameIno {
			t.Errorf("%s: the path's inode is %d, the open file's %d; want same %v", s.name, path.Ino, first.Ino, s.sameIno)
		}
		if listed := listedIno(t, m.path("/"), "log"); listed != path.Ino {
			t.Errorf("%s: the listing says inode %d, stat %d", s.name, listed, path.Ino)
		}
		if got := statOf(t, f); got.Nlink != s.nlink {
			t.Errorf("%s: the open file's st_nlink = %d, want %d", s.name, got.Nlink, s.nlink)
		}
		b, err := io.ReadAll(f)
		if err != nil || string(b) != s.readsMore {
			t.Errorf("%s: the open file read %q, %v; want %q", s.name, b, err, s.readsMore)
		}
	}
	if got := statOf(t, f); got.Size != int64(len("one\ntwo\nthree\n")) {
		t.Errorf("the open file's size = %d, want its own version's", got.Size)
	}
	if got := string(readFile(t, m.path("/log"))); got != "replaced\n" {
		t.Errorf("a new open read %q", got)
	}
}
