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
