package integration_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDeclaredSHA256Xattr lists a file with its hash over MCP, as an agent
// announcing what it has, and reads the hash back through the mount from
// user.depotfs.declared_sha256 without the content; once the content is
// pushed, the attribute is gone and user.depotfs.sha256 has the hash.
func TestDeclaredSHA256Xattr(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	content := "announced before it is sent\n"
	sum := sha256.Sum256([]byte(content))
	want := hex.EncodeToString(sum[:])
	d.mustCall("guide_list_directory", map[string]any{"path": "/agent", "entries": []any{
		map[string]any{"name": "later.txt", "type": "file", "size": len(content), "sha256": strings.ToUpper(want)},
	}})
	buf := make([]byte, 128)
	n, err := unix.Getxattr(d.path("/agent/later.txt"), "user.depotfs.declared_sha256", buf)
	if err != nil || string(buf[:n]) != want {
		t.Fatalf("user.depotfs.declared_sha256 of the placeholder = %q, %v; want %s", buf[:n], err, want)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/agent/later.txt", "content": content})
	if _, err := unix.Getxattr(d.path("/agent/later.txt"), "user.depotfs.declared_sha256", buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("user.depotfs.declared_sha256 once the content arrived: %v, want ENODATA", err)
	}
	if n, err := unix.Getxattr(d.path("/agent/later.txt"), "user.depotfs.sha256", buf); err != nil || string(buf[:n]) != want {
		t.Errorf("user.depotfs.sha256 once the content arrived = %q, %v; want %s", buf[:n], err, want)
	}
}
