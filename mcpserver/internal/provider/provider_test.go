package provider_test

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver/internal/provider"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/mcpserver/internal/tool/tooltest"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// newDepot serves the provider tools over a bolt store in a temporary
// directory holding /w/a.txt, /w/latin.txt (latin-1 bytes), /w/sub/b.py
// and /w/big.bin (2,048 bytes).
func newDepot(t *testing.T) *tooltest.Harness {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), &bolt.Options{KeepVersions: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h := tooltest.New(t, st, nil, func(env *tool.Env, _ *tool.Runtime) []tool.Tool { return provider.Tools(env) })
	h.Put("/w/a.txt", "alpha\n")
	h.Put("/w/latin.txt", "caf\xe9")
	h.Put("/w/sub/b.py", "print(1)\n")
	h.Put("/w/big.bin", strings.Repeat("x", 2048))
	return h
}

func hexSum(sum []byte) string { return hex.EncodeToString(sum) }

// TestProviderCalls: each provider tool's argument rules and replies,
// values and error texts, over a real store; no call changes the depot.
func TestProviderCalls(t *testing.T) {
	t.Parallel()
	h := newDepot(t)
	before := h.Revision()
	md5Sum, sha1Sum, sha256Sum := md5.Sum([]byte("alpha\n")), sha1.Sum([]byte("alpha\n")), sha256.Sum256([]byte("alpha\n"))
	for _, c := range []struct {
		name, tool, args string
		isError          bool
		want             []string // texts the reply contains; an exact reply when one entry starts with "="
	}{
		// read_file
		{"read text", "read_file", `{"file_path": "/w/a.txt"}`, false, []string{"=alpha\n"}},
		{"read relative to the root", "read_file", `{"file_path": "w/a.txt"}`, false, []string{"=alpha\n"}},
		{"read under the mount", "read_file", `{"file_path": "/mnt/depot/w/a.txt"}`, false, []string{"=alpha\n"}},
		{"read latin-1", "read_file", `{"file_path": "/w/latin.txt", "encoding": "latin-1"}`, false, []string{"=café"}},
		{"read latin-1 bytes as utf-8", "read_file", `{"file_path": "/w/latin.txt"}`, true, []string{"FileProviderError", "Encoding error"}},
		{"read unknown encoding", "read_file", `{"file_path": "/w/a.txt", "encoding": "klingon"}`, true, []string{"FileProviderError", "unknown text encoding", "utf-8"}},
		{"read max_size as digits", "read_file", `{"file_path": "/w/a.txt", "max_size": "100"}`, false, []string{"=alpha\n"}},
		{"read max_size as a word", "read_file", `{"file_path": "/w/a.txt", "max_size": "big"}`, true, []string{"FileProviderError", "max_size", "integer"}},
		{"read over max_size", "read_file", `{"file_path": "/w/big.bin", "max_size": 100}`, true, []string{"FileSizeLimitExceededError", "File size 2048 exceeds limit 100"}},
		{"read without file_path", "read_file", `{}`, true, []string{"FileProviderError", "file_path", "required"}},
		{"read with path, not file_path", "read_file", `{"path": "/w/a.txt"}`, true, []string{"FileProviderError", "file_path"}},
		{"read file_path twice", "read_file", `{"file_path": "/w/a.txt", "file_path": "/w/sub/b.py"}`, true, []string{"FileProviderError", "file_path"}},
		{"read a directory", "read_file", `{"file_path": "/w/sub"}`, true, []string{"FileProviderError", "not a file", "list_directory"}},
		{"read missing", "read_file", `{"file_path": "/w/none.txt"}`, true, []string{"FileNotFoundError", "/w/none.txt", "list_directory"}},
		{"read missing under another mount", "read_file", `{"file_path": "/srv/depot/w/a.txt"}`, true, []string{"FileNotFoundError", `did you mean \"/w/a.txt\"`}},
		{"read climbing out", "read_file", `{"file_path": "../../etc/passwd"}`, true, []string{"PermissionError", "leaves the depot"}},
		{"read_file_binary", "read_file_binary", `{"file_path": "/w/latin.txt"}`, false, []string{"=" + base64.StdEncoding.EncodeToString([]byte("caf\xe9"))}},
		{"read_file_binary takes no encoding", "read_file_binary", `{"file_path": "/w/a.txt", "encoding": "utf-8"}`, true, []string{"FileProviderError", "encoding"}},
		// list_directory, find_files
		{"list", "list_directory", `{"directory_path": "/w"}`, false, []string{`=["/w/a.txt","/w/big.bin","/w/latin.txt","/w/sub"]`}},
		{"list recursive with a pattern", "list_directory", `{"directory_path": "/w", "recursive": true, "pattern": "*.py"}`, false, []string{`=["/w/sub/b.py"]`}},
		{"list at most 2", "list_directory", `{"directory_path": "/w", "max_files": "2"}`, false, []string{`=["/w/a.txt","/w/big.bin"]`}},
		{"list under the mount", "list_directory", `{"directory_path": "/mnt/depot/w/sub"}`, false, []string{`=["/mnt/depot/w/sub/b.py"]`}},
		{"list a file", "list_directory", `{"directory_path": "/w/a.txt"}`, true, []string{"FileProviderError", "not a directory", "read_file"}},
		{"list a bad pattern", "list_directory", `{"directory_path": "/w", "pattern": "[a"}`, true, []string{"FileProviderError", "pattern"}},
		{"find", "find_files", `{"directory_path": "/w", "patterns": ["*.txt", "*.py"]}`, false, []string{`=["/w/a.txt","/w/latin.txt","/w/sub/b.py"]`}},
		{"find not recursive", "find_files", `{"directory_path": "/w", "patterns": ["*.py"], "recursive": false}`, false, []string{`=[]`}},
		{"find patterns as a string", "find_files", `{"directory_path": "/w", "patterns": "*.txt"}`, true, []string{"FileProviderError", "patterns", "array"}},
		{"find a pattern that is a number", "find_files", `{"directory_path": "/w", "patterns": [1]}`, true, []string{"patterns[0]", "string"}},
		// file_exists, get_file_stats
		{"exists", "file_exists", `{"path": "/w/a.txt"}`, false, []string{"=true"}},
		{"exists a directory", "file_exists", `{"path": "w/sub"}`, false, []string{"=true"}},
		{"exists missing", "file_exists", `{"path": "/w/none"}`, false, []string{"=false"}},
		{"exists climbing out", "file_exists", `{"path": "../../x"}`, false, []string{"=false"}},
		{"exists without path", "file_exists", `{}`, true, []string{"path", "required"}},
		{"stats", "get_file_stats", `{"path": "/w/a.txt"}`, false, []string{`"path":"/w/a.txt"`, `"file_type":"file"`, `"size":6`, `"is_readable":true`, `"is_directory":false`}},
		{"stats of a directory", "get_file_stats", `{"path": "/mnt/depot/w/sub"}`, false, []string{`"path":"/mnt/depot/w/sub"`, `"file_type":"directory"`, `"size":0`}},
		{"stats missing", "get_file_stats", `{"path": "/w/none"}`, true, []string{"FileNotFoundError"}},
		// calculate_file_hash
		{"md5 by default", "calculate_file_hash", `{"file_path": "/w/a.txt"}`, false, []string{"=" + hexSum(md5Sum[:])}},
		{"sha1", "calculate_file_hash", `{"file_path": "/w/a.txt", "algorithm": "SHA1"}`, false, []string{"=" + hexSum(sha1Sum[:])}},
		{"sha256", "calculate_file_hash", `{"file_path": "/w/a.txt", "algorithm": "sha256"}`, false, []string{"=" + hexSum(sha256Sum[:])}},
		{"crc32", "calculate_file_hash", `{"file_path": "/w/a.txt", "algorithm": "crc32"}`, true, []string{"FileProviderError", "Invalid hash algorithm", "md5, sha1, sha256"}},
		{"hash of a directory", "calculate_file_hash", `{"file_path": "/w/sub", "algorithm": "sha256"}`, true, []string{"not a file"}},
		// every tool: arguments that are not an object
		{"arguments as an array", "get_file_stats", `["/w/a.txt"]`, true, []string{"FileProviderError", "object"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.Call(c.tool, c.args)
			if r.IsError != c.isError {
				t.Fatalf("%s %s: isError %v, want %v: %s", c.tool, c.args, r.IsError, c.isError, r.Text)
			}
			for _, w := range c.want {
				if exact, ok := strings.CutPrefix(w, "="); ok {
					if r.Text != exact {
						t.Errorf("%s %s: %q, want %q", c.tool, c.args, r.Text, exact)
					}
				} else if !strings.Contains(r.Text, w) {
					t.Errorf("%s %s: %s, without %q", c.tool, c.args, r.Text, w)
				}
			}
			if r.IsError && !strings.HasPrefix(r.Text, `{"error":`) {
				t.Errorf("%s %s: an error that is not the contract's object: %s", c.tool, c.args, r.Text)
			}
		})
	}
	if got := h.Revision(); got != before {
		t.Errorf("the provider tools changed the depot: revision %d, then %d", before, got)
	}
}

// TestProviderSnapshots: a snapshot is read by the snapshot argument and
// by /.snapshots/NAME paths, as it was when taken.
func TestProviderSnapshots(t *testing.T) {
	t.Parallel()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), &bolt.Options{KeepVersions: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h := tooltest.New(t, st, nil, func(env *tool.Env, _ *tool.Runtime) []tool.Tool { return provider.Tools(env) })
	h.Put("/w/a.txt", "old")
	if _, err := st.CreateSnapshot(t.Context(), store.SnapshotRequest{Name: "s", Prefix: "/w"}); err != nil {
		t.Fatal(err)
	}
	h.Put("/w/a.txt", "new")
	for _, c := range []struct{ tool, args, want string }{
		{"read_file", `{"file_path": "/w/a.txt", "snapshot": "s"}`, "old"},
		{"read_file", `{"file_path": "/.snapshots/s/a.txt"}`, "old"},
		{"read_file", `{"file_path": "/w/a.txt"}`, "new"},
		{"list_directory", `{"directory_path": "/.snapshots/s"}`, `["/.snapshots/s/a.txt"]`},
		{"file_exists", `{"path": "/.snapshots/s/a.txt"}`, "true"},
	} {
		if r := h.Call(c.tool, c.args); r.IsError || r.Text != c.want {
			t.Errorf("%s %s: %s (isError %v), want %s", c.tool, c.args, r.Text, r.IsError, c.want)
		}
	}
}
