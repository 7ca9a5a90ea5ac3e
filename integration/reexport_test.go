package integration_test

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fuseHandle is a file handle of the mount, as the kernel's FUSE encodes
// it: the node ID in two 32-bit halves, then the generation.
func fuseHandle(t *testing.T, path string) (unix.FileHandle, uint64) {
	t.Helper()
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0)
	if err != nil {
		t.Fatalf("name_to_handle_at %s: %v", path, err)
	}
	b := h.Bytes()
	if len(b) < 8 {
		t.Fatalf("name_to_handle_at %s: a %d-byte handle", path, len(b))
	}
	return h, uint64(binary.NativeEndian.Uint32(b[0:]))<<32 | uint64(binary.NativeEndian.Uint32(b[4:]))
}

// readByHandle opens h on the mount at mnt with open_by_handle_at and
// reads it.
func readByHandle(mnt string, h unix.FileHandle) (string, error) {
	m, err := os.Open(mnt)
	if err != nil {
		return "", err
	}
	defer m.Close()
	fd, err := unix.OpenByHandleAt(int(m.Fd()), h, unix.O_RDONLY)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), "by-handle")
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// TestMountHandlesSurviveRestart takes file handles of the FUSE mount
// (name_to_handle_at, as the kernel's NFS server does when it re-exports
// the mount) and opens them (open_by_handle_at) after depotfs restarts
// and mounts again: a handle carries depotfs's inode number, so a file's
// handle still reads that file, and a replaced file's handle its version
// while the store keeps it; a version no longer kept answers ESTALE, as
// does a directory's handle (see DESIGN.md, "Doors without FUSE").
func TestMountHandlesSurviveRestart(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--keep-versions", "1"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/re/a.txt", "content": "alpha\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/re/b.txt", "content": "bravo 1\n"})
	ha, idA := fuseHandle(t, d.path("/re/a.txt"))
	hb, _ := fuseHandle(t, d.path("/re/b.txt"))
	hdir, _ := fuseHandle(t, d.path("/re"))
	var st unix.Stat_t
	if err := unix.Stat(d.path("/re/a.txt"), &st); err != nil || st.Ino != idA {
		t.Fatalf("a.txt's handle carries node ID %d, its inode number is %d (%v)", idA, st.Ino, err)
	}
	if got, err := readByHandle(d.mount, ha); err != nil || got != "alpha\n" {
		t.Fatalf("a.txt by handle before the restart: %q, %v", got, err)
	}

	d = d.restart()
	if got, err := readByHandle(d.mount, ha); err != nil || got != "alpha\n" {
		t.Errorf("a.txt by its handle after a restart: %q, %v", got, err)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/re/b.txt", "content": "bravo 2\n"})
	if got, err := readByHandle(d.mount, hb); err != nil || got != "bravo 1\n" {
		t.Errorf("the replaced b.txt by its old handle: %q, %v; want its first version", got, err)
	}
	if got, err := os.ReadFile(d.path("/re/b.txt")); err != nil || string(got) != "bravo 2\n" {
		t.Errorf("b.txt by name: %q, %v", got, err)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/re/b.txt", "content": "bravo 3\n"})
	d = d.restart()
	if _, err := readByHandle(d.mount, hb); !errors.Is(err, unix.ESTALE) {
		t.Errorf("b.txt's handle of a version no longer kept: %v, want ESTALE", err)
	}
	if _, err := readByHandle(d.mount, hdir); !errors.Is(err, unix.ESTALE) {
		t.Errorf("a directory's handle after a restart: %v, want ESTALE", err)
	}
	if got, err := readByHandle(d.mount, ha); err != nil || got != "alpha\n" {
		t.Errorf("a.txt by its handle after a second restart: %q, %v", got, err)
	}
}
