package vfs_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs"
)

// TestFindLooksUpNoFile: find lists a large directory without the server
// making a node for each file. glibc sizes its getdents buffer by the
// directory's st_blksize and the kernel its READDIRPLUS by that buffer, so
// a directory that reported 1 MiB (a file's read size) got its whole
// listing with attributes, one lookup and one node per file, in the first
// READDIRPLUS; find needs only the names. Stats after the find then reach
// the server as lookups for most files: the kernel did not learn them
// from the listing.
func TestFindLooksUpNoFile(t *testing.T) {
	if _, err := exec.LookPath("find"); err != nil {
		t.Skip("find not installed")
	}
	// 800 files: READDIRPLUS buffers of 1 MiB give the kernel them all,
	// of 4 KiB about the first 200 (the kernel's figure, 600 files or
	// 1,000), so the lookups tell the two apart as 2,000 files did.
	const n = 800
	st, _ := newStore(t, nil)
	obs := &opCounts{n: map[string]int{}}
	m := mount(t, st, &vfs.Options{Observer: obs})
	reqs := make([]store.PutRequest, n)
	for i := range reqs {
		reqs[i] = store.PutRequest{Path: fmt.Sprintf("/d/f%05d.txt", i), Data: []byte{byte(i)}}
	}
	if _, err := st.PutBatch(t.Context(), reqs); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, m)

	var dst syscall.Stat_t
	if err := syscall.Stat(m.path("/d"), &dst); err != nil {
		t.Fatal(err)
	}
	if dst.Blksize != 4096 {
		t.Errorf("directory st_blksize %d, want 4096 (as ext4's)", dst.Blksize)
	}
	out, err := exec.Command("find", m.path("/d"), "-type", "f").Output()
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	if got := bytes.Count(out, []byte("\n")); got != n {
		t.Fatalf("find listed %d files, want %d", got, n)
	}
	before := obs.get("lookup")
	for i := range n {
		if _, err := os.Lstat(m.path(fmt.Sprintf("/d/f%05d.txt", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := obs.get("lookup") - before; got < n/2 {
		t.Errorf("stat of %d files after find sent %d lookups: find made the server look up the files it only listed", n, got)
	}
}

// TestListedLookupIsLookup: a file the kernel learns from a listing
// (READDIRPLUS, answered from the listing's entry with its hash raw) shows
// the attributes and provenance a plain lookup of its name shows (the
// entry from the store, its hash spelled): present files and placeholders
// with a declared hash, in one directory and in the root.
func TestListedLookupIsLookup(t *testing.T) {
	st, _ := newStore(t, nil)
	listed := mount(t, st, nil)
	named := mount(t, st, nil)
	var reqs []store.PutRequest
	for i := range 40 {
		reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/d/f%02d.txt", i), Data: bytes.Repeat([]byte{byte(i)}, i), Encoding: "utf-8", Source: fmt.Sprintf("push:%d", i%3)})
	}
	reqs = append(reqs, store.PutRequest{Path: "/top.bin", Data: []byte("top"), Encoding: "base64", Source: "upload:1"})
	if _, err := st.PutBatch(t.Context(), reqs); err != nil {
		t.Fatal(err)
	}
	const declared = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if _, err := st.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{
		{Path: "/d/later.txt", Kind: store.KindFile, Size: 3, SHA256: declared},
		{Path: "/d/unknown.txt", Kind: store.KindFile, Size: 5},
	}}); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, listed)
	waitApplied(t, st, named)
	xattrs := []string{vfs.XattrSHA256, vfs.XattrDeclaredSHA256, vfs.XattrSource, vfs.XattrEncoding, vfs.XattrState}
	type seen struct {
		st syscall.Stat_t
		x  map[string]string
	}
	look := func(p string) seen {
		t.Helper()
		var s seen
		if err := syscall.Lstat(p, &s.st); err != nil {
			t.Fatal(err)
		}
		s.st.Dev = 0 // the mount's
		s.x = map[string]string{}
		buf := make([]byte, 256)
		for _, name := range xattrs {
			n, err := syscall.Getxattr(p, name, buf)
			if err != nil {
				s.x[name] = err.Error()
				continue
			}
			s.x[name] = string(buf[:n])
		}
		return s
	}
	files := 0
	for _, dir := range []string{"/", "/d"} {
		ents, err := os.ReadDir(listed.path(dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range ents {
			if de.IsDir() {
				continue
			}
			p := dir + "/" + de.Name()
			if dir == "/" {
				p = "/" + de.Name()
			}
			got, want := look(listed.path(p)), look(named.path(p))
			if got.st != want.st || fmt.Sprint(got.x) != fmt.Sprint(want.x) {
				t.Errorf("%s listed:\n %+v %v\nlooked up:\n %+v %v", p, got.st, got.x, want.st, want.x)
			}
			if de.Name() == "later.txt" && got.x[vfs.XattrDeclaredSHA256] != declared {
				t.Errorf("%s: declared hash %q, want %q", p, got.x[vfs.XattrDeclaredSHA256], declared)
			}
			files++
		}
	}
	if files != 43 {
		t.Errorf("%d files listed, want 43", files)
	}
}
