package vfs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestSnapshotTree: /.snapshots/NAME shows the tree below the snapshot's
// prefix as of its revision, whatever happens to the live tree after it;
// it is read-only; its inode numbers meet neither the live tree's nor
// another snapshot's; .snapshots is not listed in the root but can be
// entered; a snapshot created or deleted shows within a second.
func TestSnapshotTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newStore(t, &bolt.Options{KeepVersions: 1})
	m := mount(t, st, nil)
	put(t, st, m, store.PutRequest{Path: "/app/a.txt", Data: []byte("a one")})
	put(t, st, m, store.PutRequest{Path: "/app/sub/b.txt", Data: []byte("b one")})
	put(t, st, m, store.PutRequest{Path: "/other.txt", Data: []byte("other")})
	if _, err := st.CreateSnapshot(ctx, store.SnapshotRequest{Name: "s1", Prefix: "/app"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSnapshot(ctx, store.SnapshotRequest{Name: "all"}); err != nil {
		t.Fatal(err)
	}
	// The live tree moves on: an update, a removal and a new file.
	put(t, st, m, store.PutRequest{Path: "/app/a.txt", Data: []byte("a two, longer")})
	if err := st.Remove(ctx, store.RemoveRequest{Path: "/app/sub", Recursive: true}); err != nil {
		t.Fatal(err)
	}
	put(t, st, m, store.PutRequest{Path: "/app/new.txt", Data: []byte("new")})
	waitApplied(t, st, m)

	snap := m.path("/.snapshots/s1")
	for p, want := range map[string]string{
		"a.txt":            "a one",
		"sub/b.txt":        "b one",
		"../all/app/a.txt": "a one",
		"../all/other.txt": "other",
	} {
		if got := readFile(t, filepath.Join(snap, p)); string(got) != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	if got := readFile(t, m.path("/app/a.txt")); string(got) != "a two, longer" {
		t.Errorf("live a.txt: %q", got)
	}
	if _, err := os.Stat(filepath.Join(snap, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file made after the snapshot: %v, want not exist", err)
	}
	if names := dirNames(t, snap); !slices.Equal(names, []string{"a.txt", "sub"}) {
		t.Errorf("snapshot lists %v", names)
	}
	if names := dirNames(t, m.path("/.snapshots")); !slices.Equal(names, []string{"all", "s1"}) {
		t.Errorf(".snapshots lists %v", names)
	}
	if slices.Contains(dirNames(t, m.Dir()), ".snapshots") {
		t.Error("the root lists .snapshots")
	}

	// Read-only.
	if err := os.WriteFile(filepath.Join(snap, "a.txt"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) && !errors.Is(err, fs.ErrPermission) {
		t.Errorf("writing into a snapshot: %v", err)
	}

	// Inode numbers: distinct between the live file, and the same version
	// in two snapshots.
	inos := map[uint64]string{}
	for _, p := range []string{"/app/a.txt", "/app", "/.snapshots/s1/a.txt", "/.snapshots/all/app/a.txt", "/.snapshots/s1", "/.snapshots/all/app", "/.snapshots/s1/sub/b.txt", "/.snapshots/all/app/sub/b.txt"} {
		fi, err := os.Stat(m.path(p))
		if err != nil {
			t.Fatal(err)
		}
		ino := fi.Sys().(*syscall.Stat_t).Ino
		if other, ok := inos[ino]; ok {
			t.Errorf("%s and %s share inode %d", p, other, ino)
		}
		inos[ino] = p
	}

	// Created and deleted snapshots show within a second; a missing name
	// is not remembered.
	if _, err := os.Stat(m.path("/.snapshots/later")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("before creation: %v", err)
	}
	if _, err := st.CreateSnapshot(ctx, store.SnapshotRequest{Name: "later", Prefix: "/app"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, m.path("/.snapshots/later/a.txt")); string(got) != "a two, longer" {
		t.Errorf("later/a.txt: %q", got)
	}
	if err := st.DeleteSnapshot(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := os.Stat(snap)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deleted snapshot still shows after 5 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dirNames lists dir's names in order.
func dirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// BenchmarkWalkSnapshot walks and reads 20,000 files of a snapshot and of
// the live tree they came from, each on a fresh mount, alternating which
// goes first, and reports the snapshot's time as a fraction of the live
// tree's (the goal is at most 1.2).
func BenchmarkWalkSnapshot(b *testing.B) {
	const n = 20000
	st, _ := newStore(b, &bolt.Options{KeepVersions: store.DefaultKeepVersions})
	reqs := make([]store.PutRequest, 0, 1000)
	for i := range n {
		reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/tree/d%02d/f%05d", i%100, i), Data: pattern(1024, byte(i))})
		if len(reqs) == cap(reqs) {
			if _, err := st.PutBatch(b.Context(), reqs); err != nil {
				b.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	if _, err := st.CreateSnapshot(b.Context(), store.SnapshotRequest{Name: "s", Prefix: "/tree"}); err != nil {
		b.Fatal(err)
	}
	walk := func(root string) time.Duration {
		m := mount(b, st, nil)
		defer m.Unmount()
		start := time.Now()
		err := filepath.WalkDir(m.path(root), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			_, err = os.ReadFile(p)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var live, snap time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			live += walk("/tree")
			snap += walk("/.snapshots/s")
		} else {
			snap += walk("/.snapshots/s")
			live += walk("/tree")
		}
	}
	b.ReportMetric(float64(live.Nanoseconds())/float64(b.N*n), "live-ns/file")
	b.ReportMetric(float64(snap.Nanoseconds())/float64(b.N*n), "snapshot-ns/file")
	b.ReportMetric(float64(snap)/float64(live), "snapshot/live")
}
