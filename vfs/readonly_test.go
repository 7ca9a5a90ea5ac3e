package vfs_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// TestReadOnly checks that every kind of change fails with EROFS and
// changes nothing.
func TestReadOnly(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	put(t, st, m, store.PutRequest{Path: "/dir/file", Data: []byte("keep me")})
	file, dir := m.path("/dir/file"), m.path("/dir")
	run := func(name string, args ...string) error {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err == nil {
			return nil
		}
		if strings.Contains(string(out), "Read-only file system") {
			return syscall.EROFS
		}
		return errors.New(string(out))
	}
	tests := []struct {
		name string
		do   func() error
	}{
		{"os.WriteFile existing", func() error { return os.WriteFile(file, []byte("x"), 0o644) }},
		{"os.WriteFile new", func() error { return os.WriteFile(m.path("/dir/new"), []byte("x"), 0o644) }},
		{"os.Create", func() error { _, err := os.Create(m.path("/created")); return err }},
		{"open for append", func() error { _, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0); return err }},
		{"open read-write", func() error { _, err := os.OpenFile(file, os.O_RDWR, 0); return err }},
		{"os.Truncate", func() error { return os.Truncate(file, 0) }},
		{"os.Mkdir", func() error { return os.Mkdir(m.path("/newdir"), 0o755) }},
		{"os.Remove file", func() error { return os.Remove(file) }},
		{"os.Remove dir", func() error { return os.Remove(dir) }},
		{"os.Rename", func() error { return os.Rename(file, m.path("/dir/renamed")) }},
		{"os.Chmod", func() error { return os.Chmod(file, 0o777) }},
		{"os.Chown", func() error { return os.Chown(file, 1, 1) }},
		{"os.Symlink", func() error { return os.Symlink("file", m.path("/dir/link")) }},
		{"os.Link", func() error { return os.Link(file, m.path("/dir/hard")) }},
		{"setxattr", func() error { return syscall.Setxattr(file, "user.x", []byte("y"), 0) }},
		{"removexattr", func() error { return syscall.Removexattr(file, "user.depotfs.sha256") }},
		{"touch existing", func() error { return run("touch", file) }},
		{"touch new", func() error { return run("touch", m.path("/dir/touched")) }},
		{"shell redirection", func() error { return run("sh", "-c", "echo x > "+file) }},
		{"shell redirection new", func() error { return run("sh", "-c", "echo x > "+m.path("/dir/redirected")) }},
		{"mkdir -p", func() error { return run("mkdir", "-p", m.path("/a/b")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, syscall.EROFS) {
				t.Errorf("got %v, want EROFS", err)
			}
		})
	}
	if got := string(readFile(t, file)); got != "keep me" {
		t.Errorf("file changed to %q", got)
	}
	names, err := os.ReadDir(dir)
	if err != nil || len(names) != 1 {
		t.Errorf("directory now has %v (err %v), want only file", names, err)
	}
}
