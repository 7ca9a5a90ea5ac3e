package mcpserver_test

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver"
)

// m is shorthand for a JSON object of arguments.
type m = map[string]any

// TestBadInput sends calls that must be refused and checks, for each, the
// error type, that the message names the problem, and that the store did
// not change: the same revision, the same entries, the target still absent.
func TestBadInput(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, MaxContentBytes: 1024, MaxChunks: 8, MaxListEntries: 5, MaxFileBytes: 2048}})
	h.ok("guide_cache_file", m{"path": "/conflict/file.txt", "content": "I am a file"}, nil)
	chunk0 := []byte("aaa")
	whole := sum([]byte("aaabbbccc"))
	h.ok("guide_read_file", m{"path": "/upload/target", "upload_id": "u-count", "chunk_index": 0, "chunk_count": 3, "content": string(chunk0), "sha256": whole}, nil)
	chunk := func(extra m) m {
		args := m{"path": "/upload/target", "upload_id": "u-count", "chunk_index": 1, "chunk_count": 3, "content": "bbb", "sha256": whole}
		for k, v := range extra {
			if v == nil {
				delete(args, k)
			} else {
				args[k] = v
			}
		}
		return args
	}
	long := "/" + strings.Repeat("d/", 2100) + "f"
	sixEntries := []any{}
	for i := range 6 {
		sixEntries = append(sixEntries, m{"name": string(rune('a' + i)), "type": "file"})
	}

	tests := []struct {
		name     string
		tool     string
		args     any
		wantType string
		wantMsg  string
		target   string
	}{
		// Paths.
		{"dotdot escape", "guide_cache_file", m{"path": "../../etc/passwd", "content": "x"}, "security", "escapes", "/etc/passwd"},
		{"backslash escape", "guide_cache_file", m{"path": `a\..\..\..\x`, "content": "x"}, "security", "escapes", "/x"},
		{"NUL", "guide_cache_file", m{"path": "/a\x00b", "content": "x"}, "validation", "NUL", "/a"},
		{"control character", "guide_cache_file", m{"path": "/a\x1bb", "content": "x"}, "validation", "control", "/a"},
		{"invalid UTF-8 bytes", "guide_cache_file", json.RawMessage("{\"path\":\"/bad\xff.txt\",\"content\":\"x\"}"), "validation", "UTF-8", "/bad"},
		{"unpaired surrogate escape", "guide_cache_file", json.RawMessage(`{"path":"/bad\udc80.txt","content":"x"}`), "validation", "surrogate", "/bad"},
		{"replacement character", "guide_cache_file", m{"path": "/bad\ufffd.txt", "content": "x"}, "validation", "U+FFFD", "/bad"},
		{"256-byte component", "guide_cache_file", m{"path": "/" + strings.Repeat("x", 256), "content": "x"}, "validation", "255", "/x"},
		{"path over 4096 bytes", "guide_cache_file", m{"path": long, "content": "x"}, "validation", "4096", "/d"},
		{"root as a file", "guide_cache_file", m{"path": "/", "content": "x"}, "validation", "root", "/t"},
		{"file over a directory", "guide_cache_file", m{"path": "/conflict", "content": "x"}, "conflict", "/conflict", "/t"},
		{"file below a file", "guide_cache_file", m{"path": "/conflict/file.txt/x", "content": "x"}, "conflict", "file.txt", "/conflict/file.txt/x"},
		{"filename without a name", "guide_cache_file", m{"filename": "..", "content": "x"}, "validation", "filename", "/uploads"},
		{"filename with NUL", "guide_cache_file", m{"filename": "a\x00b", "content": "x"}, "validation", "NUL", "/uploads"},

		// Content and hashes.
		{"invalid base64", "guide_cache_file", m{"path": "/t", "content": "not base64!", "encoding": "base64"}, "validation", "base64", "/t"},
		{"url-safe base64", "guide_cache_file", m{"path": "/t", "content": "-_-_", "encoding": "base64"}, "validation", "base64", "/t"},
		{"wrong sha256", "guide_cache_file", m{"path": "/t", "content": "x", "sha256": sum([]byte("y"))}, "validation", "hashes to", "/t"},
		{"malformed sha256", "guide_cache_file", m{"path": "/t", "content": "x", "sha256": "abc"}, "validation", "64 hexadecimal", "/t"},
		{"invalid UTF-8 content", "guide_cache_file", json.RawMessage("{\"path\":\"/t\",\"content\":\"\xc3\x28\"}"), "validation", "content", "/t"},
		{"content over the limit", "guide_cache_file", m{"path": "/t", "content": strings.Repeat("x", 1025)}, "limit", "1024", "/t"},
		{"base64 content over the limit", "guide_cache_file", m{"path": "/t", "content": base64.StdEncoding.EncodeToString(make([]byte, 1025)), "encoding": "base64"}, "limit", "1024", "/t"},
		{"unknown encoding", "guide_cache_file", m{"path": "/t", "content": "x", "encoding": "utf-16"}, "validation", "encoding", "/t"},

		// Arguments: presence, types, names.
		{"missing content", "guide_cache_file", m{"path": "/t"}, "validation", "content: required", "/t"},
		{"missing path and filename", "guide_cache_file", m{"content": "x"}, "validation", "path: required", "/t"},
		{"no arguments", "guide_cache_file", nil, "validation", "required", "/t"},
		{"number for path", "guide_cache_file", m{"path": 42, "content": "x"}, "validation", "path: expected string, got number", "/t"},
		{"boolean for content", "guide_cache_file", m{"path": "/t", "content": true}, "validation", "content: expected string, got boolean", "/t"},
		{"null for an optional argument", "guide_cache_file", m{"path": "/t", "content": "x", "sha256": nil}, "validation", "null", "/t"},
		{"unknown argument", "guide_cache_file", m{"path": "/t", "content": "x", "contnet": "y"}, "validation", `"contnet"`, "/t"},
		{"path and filename", "guide_cache_file", m{"path": "/t", "filename": "t", "content": "x"}, "validation", "either path or filename", "/t"},
		{"arguments not an object", "guide_cache_file", json.RawMessage(`[1,2]`), "validation", "expected an object", "/t"},
		{"duplicate argument", "guide_cache_file", json.RawMessage(`{"path":"/t","path":"/u","content":"x"}`), "validation", "more than once", "/t"},
		{"bad mtime", "guide_cache_file", m{"path": "/t", "content": "x", "mtime": "yesterday"}, "validation", "mtime", "/t"},
		{"negative mtime", "guide_cache_file", m{"path": "/t", "content": "x", "mtime": -5}, "validation", "mtime", "/t"},
		{"mtime before 1970", "guide_cache_file", m{"path": "/t", "content": "x", "mtime": "1969-12-31T23:59:59Z"}, "validation", "mtime", "/t"},
		{"boolean mtime", "guide_cache_file", m{"path": "/t", "content": "x", "mtime": true}, "validation", "mtime", "/t"},
		{"numeric mode", "guide_cache_file", m{"path": "/t", "content": "x", "mode": 644}, "validation", "octal string", "/t"},
		{"non-octal mode", "guide_cache_file", m{"path": "/t", "content": "x", "mode": "0999"}, "validation", "mode", "/t"},
		{"setuid mode", "guide_cache_file", m{"path": "/t", "content": "x", "mode": "4755"}, "validation", "mode", "/t"},
		{"zero ttl", "guide_cache_file", m{"path": "/t", "content": "x", "ttl_seconds": 0}, "validation", "ttl_seconds: 0 is below the minimum 1", "/t"},
		{"negative ttl", "guide_cache_file", m{"path": "/t", "content": "x", "ttl_seconds": -5}, "validation", "ttl_seconds", "/t"},
		{"fractional ttl", "guide_cache_file", m{"path": "/t", "content": "x", "ttl_seconds": 1.5}, "validation", "ttl_seconds: expected an integer", "/t"},
		{"ttl in words", "guide_cache_file", m{"path": "/t", "content": "x", "ttl_seconds": "an hour"}, "validation", "ttl_seconds: expected an integer (a JSON number, or a string of decimal digits)", "/t"},
		{"ttl over a century", "guide_cache_file", m{"path": "/t", "content": "x", "ttl_seconds": 4000000000}, "validation", "above the maximum", "/t"},
		{"null ttl", "guide_read_file", m{"path": "/t", "content": "x", "ttl_seconds": nil}, "validation", "null", "/t"},
		{"string pin", "guide_cache_file", m{"path": "/t", "content": "x", "pin": "true"}, "validation", "pin: expected boolean, got string", "/t"},
		{"numeric pin", "guide_read_file", m{"path": "/t", "content": "x", "pin": 1}, "validation", "pin: expected boolean, got number", "/t"},
		{"several problems at once", "guide_cache_file", m{"path": 1, "content": 2, "mode": 3}, "validation", "content: expected string", "/t"},

		// Chunked uploads.
		{"chunk index out of range", "guide_read_file", chunk(m{"chunk_index": 3}), "validation", "out of range", "/upload/target"},
		{"negative chunk index", "guide_read_file", chunk(m{"chunk_index": -1}), "validation", "chunk_index", "/upload/target"},
		{"chunk count mismatch", "guide_read_file", chunk(m{"chunk_count": 4}), "validation", "count", "/upload/target"},
		{"chunk path mismatch", "guide_read_file", chunk(m{"path": "/elsewhere"}), "validation", "upload", "/elsewhere"},
		{"chunk resent with other bytes", "guide_read_file", chunk(m{"chunk_index": 0, "content": "zzz"}), "validation", "different bytes", "/upload/target"},
		{"wrong chunk sha256", "guide_read_file", chunk(m{"chunk_sha256": sum([]byte("nope"))}), "validation", "chunk_sha256", "/upload/target"},
		{"chunk without whole sha256", "guide_read_file", chunk(m{"sha256": nil}), "validation", "sha256: required", "/upload/target"},
		{"chunk without upload_id", "guide_read_file", chunk(m{"upload_id": nil}), "validation", "upload_id: required", "/upload/target"},
		{"fractional chunk index string", "guide_read_file", chunk(m{"chunk_index": "1.5"}), "validation", "chunk_index: expected an integer (a JSON number, or a string of decimal digits)", "/upload/target"},
		{"fractional chunk index", "guide_read_file", chunk(m{"chunk_index": 1.5}), "validation", "integer", "/upload/target"},
		{"bad upload id", "guide_read_file", chunk(m{"upload_id": "a/b"}), "validation", "upload_id", "/upload/target"},
		{"too many chunks", "guide_read_file", chunk(m{"chunk_count": 9}), "limit", "8", "/upload/target"},
		{"negative total size", "guide_read_file", chunk(m{"total_size": -1}), "validation", "total_size", "/upload/target"},
		{"total size in words", "guide_read_file", chunk(m{"total_size": "nine"}), "validation", "total_size: expected an integer", "/upload/target"},
		{"total size over the file limit", "guide_read_file", chunk(m{"total_size": 5000}), "limit", "file size limit of 2048", "/upload/target"},
		{"total size without the other chunk arguments", "guide_read_file", m{"path": "/t", "content": "x", "total_size": 1}, "validation", "upload_id: required", "/t"},

		// Listings.
		{"listing name escapes", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "../x", "type": "file"}}}, "security", "not below /l", "/x"},
		{"listing path escapes", "guide_list_directory", m{"path": "../..", "entries": []any{}}, "security", "escapes", "/l"},
		{"absolute entry name", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "/x", "type": "file"}}}, "validation", "absolute", "/l"},
		{"entry name with NUL", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "a\x00", "type": "file"}}}, "validation", "entries[0].name", "/l"},
		{"duplicate entries", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "a", "type": "file"}, m{"name": "./a", "type": "file"}}}, "validation", "twice", "/l"},
		{"duplicate through nesting", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "d/f", "type": "file"}, m{"name": "d", "type": "directory", "entries": []any{m{"name": "f", "type": "file"}}}}}, "validation", "twice", "/l"},
		{"file listed as a parent", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "f", "type": "file"}, m{"name": "f/g", "type": "file"}}}, "conflict", "/l/f", "/l"},
		{"directory over a stored file", "guide_list_directory", m{"path": "/conflict", "entries": []any{m{"name": "file.txt", "type": "directory"}}}, "conflict", "file.txt", "/conflict/file.txt/x"},
		{"listing path is a file", "guide_list_directory", m{"path": "/conflict/file.txt", "entries": []any{}}, "conflict", "file.txt", "/conflict/file.txt/x"},
		{"bad pattern", "guide_list_directory", m{"path": "/l", "pattern": "[", "entries": []any{}}, "validation", "glob", "/l"},
		{"pattern with a slash", "guide_list_directory", m{"path": "/l", "pattern": "src/*.go", "entries": []any{}}, "validation", "pattern", "/l"},
		{"missing entries", "guide_list_directory", m{"path": "/l"}, "validation", "entries: required", "/l"},
		{"entries not an array", "guide_list_directory", m{"path": "/l", "entries": m{}}, "validation", "entries: expected array, got object", "/l"},
		{"entry without type", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "a"}}}, "validation", "entries[0].type: required", "/l"},
		{"entry of unknown type", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "a", "type": "symlink"}}}, "validation", "symlink", "/l"},
		{"size of a directory", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "a", "type": "directory", "size": 4}}}, "validation", "size", "/l"},
		{"entries of a file", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "a", "type": "file", "entries": []any{}}}}, "validation", "entries", "/l"},
		{"negative size", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "a", "type": "file", "size": -1}}}, "validation", "size", "/l"},
		{"unknown entry field", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "a", "type": "file", "bytes": 3}}}, "validation", `"bytes"`, "/l"},
		{"entry bad mtime", "guide_list_directory", m{"path": "/l", "entries": []any{m{"name": "a", "type": "file", "mtime": "soon"}}}, "validation", "entries[0].mtime", "/l"},
		{"too many entries", "guide_list_directory", m{"path": "/l", "entries": sixEntries}, "limit", "5", "/l"},
	}
	watched := []string{"/conflict", "/conflict/file.txt", "/upload", "/uploads", "/l"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev := h.revision()
			before := map[string]any{}
			for _, p := range append(watched, tt.target) {
				e, ok := h.stat(p)
				before[p] = []any{e, ok}
			}
			h.t = t
			env := h.fail(tt.tool, tt.args, tt.wantType)
			t.Logf("%s: %s", env.Error.Type, env.Error.Message)
			if !strings.Contains(env.Error.Message, tt.wantMsg) {
				t.Errorf("message %q does not mention %q", env.Error.Message, tt.wantMsg)
			}
			if strings.Contains(env.Error.Message, h.dir) || strings.Contains(env.Error.Instruction, h.dir) {
				t.Errorf("message leaks a host path: %q", env.Error.Message)
			}
			if got := h.revision(); got != rev {
				t.Errorf("store revision %d after a refused call, was %d", got, rev)
			}
			for _, p := range append(watched, tt.target) {
				e, ok := h.stat(p)
				if !reflect.DeepEqual([]any{e, ok}, before[p]) {
					t.Errorf("%s changed after a refused call: %+v", p, e)
				}
			}
		})
	}

	// None of the refused chunks was kept: the upload completes with the
	// original chunk 0 and the two missing ones.
	h.t = t
	var d fileReply
	h.ok("guide_read_file", chunk(nil), &d)
	if d.Upload.Received != 2 || d.Upload.Bytes != 6 {
		t.Fatalf("after refused chunks, progress %+v, want 2 chunks and 6 bytes", d.Upload)
	}
	h.ok("guide_read_file", chunk(m{"chunk_index": 2, "content": "ccc"}), &d)
	if !d.Upload.Complete || string(h.read("/upload/target")) != "aaabbbccc" {
		t.Fatalf("upload did not complete as sent: %+v", d)
	}
}
