package vfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/vfs"
)

// TestMountRefusesNonEmpty: a directory with entries is refused, naming
// one, and left as it was; AllowNonEmpty mounts over it, hiding them until
// the unmount.
func TestMountRefusesNonEmpty(t *testing.T) {
	st, _ := newStore(t, nil)
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := vfs.Mount(context.Background(), dir, st, nil)
	if !errors.Is(err, vfs.ErrNotEmpty) || !strings.Contains(err.Error(), "precious.txt") {
		t.Fatalf("mount over a non-empty directory: %v, want ErrNotEmpty naming precious.txt", err)
	}
	if isMounted(t, dir) {
		t.Fatal("the refused mount is mounted")
	}

	m := mountAt(t, dir, st, &vfs.Options{AllowNonEmpty: true})
	if _, err := os.Stat(filepath.Join(dir, "precious.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the hidden file shows through the mount: %v", err)
	}
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "precious.txt")); err != nil || string(got) != "keep" {
		t.Errorf("after unmount: %q, %v", got, err)
	}
}
