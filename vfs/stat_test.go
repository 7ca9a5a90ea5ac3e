package vfs_test

import (
	"bufio"
	"context"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/vfs"
)

func TestStat(t *testing.T) {
	st, _ := newStore(t, nil)
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 890, time.UTC)
	files := []store.PutRequest{
		{Path: "/plain", Data: []byte("abc"), MTime: mtime},
		{Path: "/script.sh", Data: []byte("#!/bin/sh\n"), Mode: 0o755, MTime: mtime},
		{Path: "/secret", Data: []byte("s"), Mode: 0o600, MTime: mtime},
		{Path: "/dir/sub/file", Data: pattern(12345, 4), MTime: mtime},
	}
	tests := []struct {
		name      string
		opts      vfs.Options
		modes     map[string]iofs.FileMode
		uid, gid  uint32
		wantMtime bool
	}{
		{
			name: "defaults",
			modes: map[string]iofs.FileMode{
				"/plain": 0o444, "/script.sh": 0o555, "/secret": 0o400,
				"/dir": iofs.ModeDir | 0o555, "/dir/sub": iofs.ModeDir | 0o555, "/dir/sub/file": 0o444, "/": iofs.ModeDir | 0o555,
			},
		},
		{
			name: "owner and umask",
			opts: vfs.Options{UID: 1234, GID: 5678, Umask: 0o027},
			modes: map[string]iofs.FileMode{
				"/plain": 0o440, "/script.sh": 0o550, "/secret": 0o400,
				"/dir": iofs.ModeDir | 0o550, "/dir/sub/file": 0o440, "/": iofs.ModeDir | 0o550,
			},
			uid: 1234, gid: 5678,
		},
		{
			name:  "umask everything",
			opts:  vfs.Options{Umask: 0o777},
			modes: map[string]iofs.FileMode{"/plain": 0, "/dir": iofs.ModeDir},
		},
	}
	var entries = map[string]store.Entry{}
	for _, f := range files {
		put(t, st, nil, f)
	}
	for _, p := range []string{"/", "/plain", "/script.sh", "/secret", "/dir", "/dir/sub", "/dir/sub/file"} {
		e, err := st.Stat(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		entries[p] = e
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mount(t, st, &tt.opts)
			for p, want := range tt.modes {
				fi, err := os.Stat(m.path(p))
				if err != nil {
					t.Fatal(err)
				}
				sys := fi.Sys().(*syscall.Stat_t)
				e := entries[p]
				if fi.Mode() != want {
					t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
				}
				if sys.Ino != vfs.Ino(e) {
					t.Errorf("%s: ino %d, want %d", p, sys.Ino, vfs.Ino(e))
				}
				if sys.Uid != tt.uid || sys.Gid != tt.gid {
					t.Errorf("%s: owner %d:%d, want %d:%d", p, sys.Uid, sys.Gid, tt.uid, tt.gid)
				}
				if sys.Nlink != 1 {
					t.Errorf("%s: nlink %d, want 1", p, sys.Nlink)
				}
				if e.IsDir() {
					continue
				}
				if fi.Size() != e.Size {
					t.Errorf("%s: size %d, want %d", p, fi.Size(), e.Size)
				}
				if !fi.ModTime().Equal(mtime) {
					t.Errorf("%s: mtime %v, want %v", p, fi.ModTime(), mtime)
				}
				if ctime := time.Unix(sys.Ctim.Unix()); !ctime.Equal(e.Updated) {
					t.Errorf("%s: ctime %v, want entry's Updated %v", p, ctime, e.Updated)
				}
				if wantBlocks := (e.Size + 511) / 512; sys.Blocks != wantBlocks {
					t.Errorf("%s: blocks %d, want %d", p, sys.Blocks, wantBlocks)
				}
			}
		})
	}
}

func TestMountOptions(t *testing.T) {
	st, _ := newStore(t, nil)
	tests := []struct {
		name    string
		opts    vfs.Options
		want    []string
		notWant []string
	}{
		{"defaults", vfs.Options{}, []string{"ro", "nosuid", "nodev", "noexec", "default_permissions", "max_read=1048576"}, []string{"allow_other"}},
		{"allow other and exec", vfs.Options{AllowOther: true, Exec: true, FsName: "mydepot"}, []string{"ro", "allow_other", "default_permissions"}, []string{"noexec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mount(t, st, &tt.opts)
			source, fstype, opts := mountinfo(t, m.Dir())
			wantSource := tt.opts.FsName
			if wantSource == "" {
				wantSource = "depotfs"
			}
			if source != wantSource || fstype != "fuse.depotfs" {
				t.Errorf("mounted as %s type %s, want %s type fuse.depotfs", source, fstype, wantSource)
			}
			for _, o := range tt.want {
				if !slices.Contains(opts, o) {
					t.Errorf("mount options %v lack %s", opts, o)
				}
			}
			for _, o := range tt.notWant {
				if slices.Contains(opts, o) {
					t.Errorf("mount options %v have %s", opts, o)
				}
			}
		})
	}
}

// mountinfo returns the source, type and options (mount and superblock)
// of the mount at dir.
func mountinfo(tb testing.TB, dir string) (source, fstype string, opts []string) {
	tb.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, _ := strings.Cut(sc.Text(), " - ")
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 6 || fields[4] != dir || len(postFields) < 3 {
			continue
		}
		opts = append(strings.Split(fields[5], ","), strings.Split(postFields[2], ",")...)
		return postFields[1], postFields[0], opts
	}
	tb.Fatalf("%s is not in /proc/self/mountinfo", dir)
	return "", "", nil
}

// TestInoStable checks that inode numbers survive an unmount and remount
// and a reopening of the store.
func TestInoStable(t *testing.T) {
	paths := []string{"/", "/a", "/a/b", "/a/b/file", "/other"}
	inos := func(m *testMount) []uint64 {
		var r []uint64
		for _, p := range paths {
			fi, err := os.Stat(m.path(p))
			if err != nil {
				t.Fatal(err)
			}
			r = append(r, fi.Sys().(*syscall.Stat_t).Ino)
		}
		return r
	}
	dbPath := filepath.Join(t.TempDir(), "depot.db")
	mntDir := filepath.Join(t.TempDir(), "mnt")

	st, err := bolt.Open(dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, st, nil, store.PutRequest{Path: "/a/b/file", Data: []byte("x")})
	put(t, st, nil, store.PutRequest{Path: "/other", Data: []byte("y")})
	m := mountAt(t, mntDir, st, nil)
	first := inos(m)
	if first[0] != store.RootIno {
		t.Errorf("root ino %d, want %d", first[0], store.RootIno)
	}
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	m = mountAt(t, mntDir, st, nil)
	if again := inos(m); !slices.Equal(again, first) {
		t.Errorf("after remount: inos %v, want %v", again, first)
	}
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = bolt.Open(dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m = mountAt(t, mntDir, st, nil)
	if again := inos(m); !slices.Equal(again, first) {
		t.Errorf("after reopening the store: inos %v, want %v", again, first)
	}
}
