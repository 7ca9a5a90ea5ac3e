package integration_test

import (
	"os"
	"testing"
	"time"
)

// TestSnapshotDirTimesFrozen: a directory of a snapshot shows, through
// the mount, the mtime it had when the snapshot was taken, after a file
// created in the live directory moved the live one: stat of
// /.snapshots/S/d and the listing of /.snapshots/S both give the old
// mtime. The snapshot's directory is first read after the change, so no
// attribute the kernel kept from before can answer for the store.
func TestSnapshotDirTimesFrozen(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/proj/d/a.txt", "content": "a"})
	before, err := os.Stat(d.path("/proj/d"))
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runDepotfs(t, "snapshot", "create", "s", "--url", d.url, "--path", "/proj"); code != 0 {
		t.Fatalf("snapshot create: exit %d\n%s%s", code, out, errOut)
	}
	// The store's clock has to move for the live mtime to differ.
	time.Sleep(50 * time.Millisecond)
	d.mustCall("guide_cache_file", map[string]any{"path": "/proj/d/b.txt", "content": "b"})
	after, err := os.Stat(d.path("/proj/d"))
	if err != nil {
		t.Fatal(err)
	}
	if after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("creating /proj/d/b.txt left the live /proj/d's mtime at %v", before.ModTime())
	}

	got, err := os.Stat(d.path("/.snapshots/s/d"))
	if err != nil {
		t.Fatal(err)
	}
	if !got.ModTime().Equal(before.ModTime()) {
		t.Errorf("stat /.snapshots/s/d: mtime %v, want %v (the live one is %v)", got.ModTime(), before.ModTime(), after.ModTime())
	}
	es, err := os.ReadDir(d.path("/.snapshots/s"))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Name() != "d" {
		t.Fatalf("ls /.snapshots/s = %v, want d alone", es)
	}
	info, err := es[0].Info()
	if err != nil {
		t.Fatal(err)
	}
	if !info.ModTime().Equal(before.ModTime()) {
		t.Errorf("ls -l /.snapshots/s: d has mtime %v, want %v", info.ModTime(), before.ModTime())
	}
}
