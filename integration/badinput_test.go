package integration_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestBadInputChangesNothing sends invalid calls; each must fail with the
// right error type, say what to do next, leak no host path, and leave the
// mount exactly as it was.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/existing/file.txt", "content": "keep me\n"})
	d.mustCall("guide_read_file", map[string]any{
		"path": "/pending/big.bin", "upload_id": "in-progress", "chunk_index": 0, "chunk_count": 2,
		"content": "Zmlyc3Q=", "encoding": "base64", "sha256": strings.Repeat("ab", 32),
	})
	otherHash := sha256.Sum256([]byte("other"))

	tests := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"dotdot escape", "guide_cache_file", map[string]any{"path": "../../etc/passwd", "content": "x"}, "security"},
		{"backslash escape", "guide_cache_file", map[string]any{"path": `..\..\etc\shadow`, "content": "x"}, "security"},
		{"NUL in path", "guide_cache_file", map[string]any{"path": "/a\x00b", "content": "x"}, "validation"},
		{"control character", "guide_cache_file", map[string]any{"path": "/a\x1bb", "content": "x"}, "validation"},
		{"invalid UTF-8", "guide_cache_file", map[string]any{"path": "/a\xffb", "content": "x"}, "validation"},
		{"256-byte component", "guide_cache_file", map[string]any{"path": "/" + strings.Repeat("n", 256), "content": "x"}, "validation"},
		{"invalid base64", "guide_cache_file", map[string]any{"path": "/b64.bin", "content": "not*base64!", "encoding": "base64"}, "validation"},
		{"unknown encoding", "guide_cache_file", map[string]any{"path": "/enc.txt", "content": "x", "encoding": "latin-1"}, "validation"},
		{"wrong sha256", "guide_cache_file", map[string]any{"path": "/hash.txt", "content": "x", "sha256": hex.EncodeToString(otherHash[:])}, "validation"},
		{"file under a file", "guide_cache_file", map[string]any{"path": "/existing/file.txt/inner", "content": "x"}, "conflict"},
		{"file over a directory", "guide_cache_file", map[string]any{"path": "/existing", "content": "x"}, "conflict"},
		{"missing content", "guide_cache_file", map[string]any{"path": "/missing.txt"}, "validation"},
		{"missing path and filename", "guide_cache_file", map[string]any{"content": "x"}, "validation"},
		{"path and filename", "guide_cache_file", map[string]any{"path": "/a.txt", "filename": "a.txt", "content": "x"}, "validation"},
		{"path of wrong type", "guide_cache_file", map[string]any{"path": 123, "content": "x"}, "validation"},
		{"unknown argument", "guide_cache_file", map[string]any{"path": "/u.txt", "content": "x", "overwrite": true}, "validation"},
		{"chunk index out of range", "guide_read_file", map[string]any{
			"path": "/chunks.bin", "upload_id": "u1", "chunk_index": 3, "chunk_count": 3,
			"content": "eA==", "encoding": "base64", "sha256": strings.Repeat("cd", 32),
		}, "validation"},
		{"chunk count disagrees", "guide_read_file", map[string]any{
			"path": "/pending/big.bin", "upload_id": "in-progress", "chunk_index": 1, "chunk_count": 5,
			"content": "c2Vjb25k", "encoding": "base64", "sha256": strings.Repeat("ab", 32),
		}, "validation"},
		{"last chunk with wrong whole hash", "guide_read_file", map[string]any{
			"path": "/pending/big.bin", "upload_id": "in-progress", "chunk_index": 1, "chunk_count": 2,
			"content": "c2Vjb25k", "encoding": "base64", "sha256": strings.Repeat("ab", 32),
		}, "validation"},
		{"listing clashes with a file", "guide_list_directory", map[string]any{
			"path": "/existing/file.txt", "entries": []any{map[string]any{"name": "x", "type": "file"}},
		}, "conflict"},
		{"listing with bad pattern", "guide_list_directory", map[string]any{
			"path": "/listed", "pattern": "[", "entries": []any{map[string]any{"name": "x", "type": "file"}},
		}, "validation"},
		{"listing with bad type", "guide_list_directory", map[string]any{
			"path": "/listed", "entries": []any{map[string]any{"name": "x", "type": "symlink"}},
		}, "validation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, d.mount)
			env := d.call(tt.tool, tt.args)
			if env.Success || env.Error == nil {
				t.Fatalf("call succeeded: %+v", env.Data)
			}
			if env.Error.Type != tt.want {
				t.Errorf("error type %q (%s), want %q", env.Error.Type, env.Error.Message, tt.want)
			}
			if env.Error.Message == "" || env.Error.Instruction == "" {
				t.Errorf("error lacks a message or an instruction: %+v", env.Error)
			}
			for _, host := range []string{d.db, d.mount, "/tmp/"} {
				if strings.Contains(env.Error.Message+env.Error.Instruction, host) {
					t.Errorf("error leaks host path %q: %+v", host, env.Error)
				}
			}
			if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
				t.Errorf("rejected call changed the depot:\n%s", diff)
			}
		})
	}
}
