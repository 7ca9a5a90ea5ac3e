package integration_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountIsReadOnly runs programs that try to change the mount; each must
// fail with EROFS.
func TestMountIsReadOnly(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/ro/file.txt", "content": "original\n"})
	file, dir := d.path("/ro/file.txt"), d.path("/ro")
	before := snapshot(t, d.mount)
	tests := []struct {
		name string
		argv []string
	}{
		{"touch new", []string{"touch", dir + "/new.txt"}},
		{"touch existing", []string{"touch", file}},
		{"rm", []string{"rm", "-f", file}},
		{"mkdir", []string{"mkdir", dir + "/sub"}},
		{"mv", []string{"mv", file, dir + "/moved.txt"}},
		{"redirect", []string{"sh", "-c", "echo x > " + file}},
		{"append", []string{"sh", "-c", "echo x >> " + file}},
		{"chmod", []string{"chmod", "777", file}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := runFailing(t, tt.argv[0], tt.argv[1:]...)
			if !strings.Contains(msg, "Read-only file system") {
				t.Errorf("%s: %q, want EROFS", strings.Join(tt.argv, " "), msg)
			}
		})
	}
	if err := unix.Setxattr(file, "user.x", []byte("1"), 0); !errors.Is(err, unix.EROFS) {
		t.Errorf("setxattr: %v, want EROFS", err)
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("mutations changed the mount:\n%s", diff)
	}
}

// getxattr reads one extended attribute with getxattr(2), as getfattr
// would, without needing the attr package installed.
func getxattr(t testing.TB, path, name string) string {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(path, name, buf)
	if err != nil {
		t.Fatalf("getxattr %s %s: %v", path, name, err)
	}
	return string(buf[:n])
}

// TestProvenanceXattrs reads the user.depotfs.* attributes.
func TestProvenanceXattrs(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	content := "provenance\n"
	d.mustCall("guide_cache_file", map[string]any{"path": "/x/p.txt", "content": content})
	got := getxattr(t, d.path("/x/p.txt"), "user.depotfs.sha256")
	if got != sha256hex([]byte(content)) {
		t.Errorf("user.depotfs.sha256 = %q, want %s", got, sha256hex([]byte(content)))
	}
	if enc := getxattr(t, d.path("/x/p.txt"), "user.depotfs.encoding"); enc != "utf-8" {
		t.Errorf("user.depotfs.encoding = %q, want utf-8", enc)
	}
	if src := getxattr(t, d.path("/x/p.txt"), "user.depotfs.source"); !strings.Contains(src, "guide_cache_file") {
		t.Errorf("user.depotfs.source = %q, want it to name the tool", src)
	}
}
