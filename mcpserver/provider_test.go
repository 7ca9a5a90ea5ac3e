package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// providerFailure is the provider contract's error object.
type providerFailure struct {
	Error     string `json:"error"`
	ErrorType string `json:"error_type"`
}

// providerOK calls a provider tool that must succeed and returns its text.
func (h *harness) providerOK(tool string, args any) string {
	h.t.Helper()
	r := h.callRaw(tool, args)
	if r.isError {
		h.t.Fatalf("%s(%v) failed: %s", tool, args, r.text)
	}
	return r.text
}

// providerFail calls a provider tool that must fail with errorType and
// returns the error message.
func (h *harness) providerFail(tool string, args any, errorType string) string {
	h.t.Helper()
	r := h.callRaw(tool, args)
	if !r.isError {
		h.t.Fatalf("%s(%v) succeeded with %q, want %s", tool, args, r.text, errorType)
	}
	var f providerFailure
	if err := json.Unmarshal([]byte(r.text), &f); err != nil {
		h.t.Fatalf("%s: error reply %q is not the contract's object: %v", tool, r.text, err)
	}
	if f.ErrorType != errorType || f.Error == "" {
		h.t.Fatalf("%s(%v): error %+v, want type %s", tool, args, f, errorType)
	}
	if string(r.structured) == "" {
		h.t.Fatalf("%s: error without structured content", tool)
	}
	return f.Error
}

// providerHarness is a harness with the provider profile over a small
// tree: text, latin-1 and binary files, a nested directory, an empty
// explicit directory and a placeholder.
func providerHarness(t *testing.T, opts *mcpserver.Options) *harness {
	t.Helper()
	if opts == nil {
		opts = &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount}}
	}
	h := newHarness(t, opts)
	h.seed("/proj/main.py", []byte("print('hello')\n"))
	h.seed("/proj/README.md", []byte("# Project\n"))
	h.seed("/proj/latin.txt", []byte("caf\xe9\n"))
	h.seed("/proj/bin/tool.bin", []byte{0, 1, 2, 3, 0xff})
	h.seed("/proj/lib/util.py", []byte("def f(): pass\n"))
	h.seed("/proj/lib/deep/test_a.py", []byte("assert True\n"))
	h.seedPlaceholder("/proj/later.py", 42)
	if _, err := h.st.Declare(h.ctx, declareDir("/proj/empty")); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestProviderReadFile(t *testing.T) {
	h := providerHarness(t, nil)
	for _, tt := range []struct {
		name string
		args m
		want string
	}{
		{"depot path", m{"file_path": "/proj/main.py"}, "print('hello')\n"},
		{"relative path", m{"file_path": "proj/main.py"}, "print('hello')\n"},
		{"mount path", m{"file_path": testMount + "/proj/main.py"}, "print('hello')\n"},
		{"dot segments", m{"file_path": `/proj/lib/..\main.py`}, "print('hello')\n"},
		{"latin-1", m{"file_path": "/proj/latin.txt", "encoding": "latin-1"}, "café\n"},
		{"encoding spelled differently", m{"file_path": "/proj/latin.txt", "encoding": "ISO_8859_1"}, "café\n"},
		{"max_size as an integer", m{"file_path": "/proj/main.py", "max_size": 15}, "print('hello')\n"},
		{"max_size as a string", m{"file_path": "/proj/main.py", "max_size": "1048576"}, "print('hello')\n"},
		{"max_size 0 means no limit", m{"file_path": "/proj/main.py", "max_size": 0}, "print('hello')\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.use(t)
			if got := h.providerOK("read_file", tt.args); got != tt.want {
				t.Errorf("read %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProviderReadFileBinary(t *testing.T) {
	h := providerHarness(t, nil)
	got := h.providerOK("read_file_binary", m{"file_path": testMount + "/proj/bin/tool.bin"})
	b, err := base64.StdEncoding.DecodeString(got)
	if err != nil || !slices.Equal(b, []byte{0, 1, 2, 3, 0xff}) {
		t.Errorf("read %q (%v)", got, err)
	}
	h.seed("/empty", nil)
	if got := h.providerOK("read_file_binary", m{"file_path": "/empty"}); got != "" {
		t.Errorf("empty file read as %q", got)
	}
}

// TestProviderErrors checks each error type of the contract, that every
// refused call changes nothing, and that messages name the path as it was
// sent and nothing else of the host.
func TestProviderErrors(t *testing.T) {
	h := providerHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, MaxReadBytes: 10}})
	for _, tt := range []struct {
		name, tool string
		args       any
		errorType  string
		wantMsg    string
	}{
		{"missing file", "read_file", m{"file_path": "/proj/nope.py"}, "FileNotFoundError", "File not found: /proj/nope.py"},
		{"missing file by mount path", "read_file_binary", m{"file_path": testMount + "/nope"}, "FileNotFoundError", "File not found: " + testMount + "/nope"},
		{"host path outside the mount", "read_file", m{"file_path": "/etc/passwd"}, "FileNotFoundError", "/etc/passwd"},
		{"directory", "read_file", m{"file_path": "/proj"}, "FileProviderError", "Path is not a file: /proj"},
		{"placeholder", "read_file", m{"file_path": "/proj/later.py"}, "FileProviderError", "has not arrived"},
		{"invalid utf-8", "read_file", m{"file_path": "/proj/latin.txt"}, "FileProviderError", "Encoding error"},
		{"ascii", "read_file", m{"file_path": "/proj/latin.txt", "encoding": "ascii"}, "FileProviderError", "ordinal not in range"},
		{"unknown encoding", "read_file", m{"file_path": "/proj/main.py", "encoding": "ebcdic-42"}, "FileProviderError", "unknown text encoding"},
		{"over max_size", "read_file", m{"file_path": "/proj/latin.txt", "max_size": 3}, "FileSizeLimitExceededError", "File size 5 exceeds limit 3"},
		{"over max_size as string", "read_file_binary", m{"file_path": "/proj/latin.txt", "max_size": "3"}, "FileSizeLimitExceededError", "exceeds limit 3"},
		{"over the server limit", "read_file", m{"file_path": "/proj/main.py"}, "FileSizeLimitExceededError", "exceeds the server's limit 10"},
		{"escape", "read_file", m{"file_path": "../../etc/shadow"}, "PermissionError", "leaves the depot"},
		{"escape by backslash", "get_file_stats", m{"path": `a\..\..\x`}, "PermissionError", "leaves the depot"},
		{"escape in a listing", "list_directory", m{"directory_path": "/../.."}, "PermissionError", "leaves the depot"},
		{"negative max_size", "read_file", m{"file_path": "/proj/main.py", "max_size": -1}, "FileProviderError", "below the minimum"},
		{"max_size not digits", "read_file", m{"file_path": "/proj/main.py", "max_size": "ten"}, "FileProviderError", "decimal digits"},
		{"missing file_path", "read_file", m{}, "FileProviderError", "file_path: required"},
		{"path not a string", "read_file_binary", m{"file_path": 7}, "FileProviderError", "expected string"},
		{"unknown argument", "read_file", m{"file_path": "/proj/main.py", "path": "/x"}, "FileProviderError", `unknown argument(s) "path"`},
		{"NUL in path", "get_file_stats", m{"path": "/a\x00b"}, "FileProviderError", "NUL"},
		{"list a file", "list_directory", m{"directory_path": "/proj/main.py"}, "FileProviderError", "Path is not a directory: /proj/main.py"},
		{"list a missing directory", "list_directory", m{"directory_path": "/nope"}, "FileNotFoundError", "Directory not found: /nope"},
		{"bad pattern", "list_directory", m{"directory_path": "/proj", "pattern": "[abc"}, "FileProviderError", "not a valid pattern"},
		{"pattern with a slash", "find_files", m{"directory_path": "/proj", "patterns": []any{"lib/*.py"}}, "FileProviderError", "must not contain '/'"},
		{"patterns missing", "find_files", m{"directory_path": "/proj"}, "FileProviderError", "patterns: required"},
		{"pattern not a string", "find_files", m{"directory_path": "/proj", "patterns": []any{"*.py", 3}}, "FileProviderError", "patterns[1]: expected a string"},
		{"find in a missing directory", "find_files", m{"directory_path": "/nope", "patterns": []any{"*"}}, "FileNotFoundError", "Directory not found"},
		{"stats of a missing path", "get_file_stats", m{"path": "/nope"}, "FileNotFoundError", "Path not found: /nope"},
		{"hash of a missing file", "calculate_file_hash", m{"file_path": "/nope", "algorithm": "sha256"}, "FileNotFoundError", "File not found"},
		{"hash algorithm", "calculate_file_hash", m{"file_path": "/proj/main.py", "algorithm": "crc32"}, "FileProviderError", "Invalid hash algorithm"},
		{"hash of a directory", "calculate_file_hash", m{"file_path": "/proj", "algorithm": "sha256"}, "FileProviderError", "Path is not a file"},
		{"hash of a placeholder", "calculate_file_hash", m{"file_path": "/proj/later.py", "algorithm": "sha256"}, "FileProviderError", "has not arrived"},
		{"md5 of a placeholder", "calculate_file_hash", m{"file_path": "/proj/later.py"}, "FileProviderError", "has not arrived"},
		{"file_exists without path", "file_exists", m{}, "FileProviderError", "path: required"},
		{"file_exists with an unknown argument", "file_exists", m{"path": "/proj", "file_path": "/proj"}, "FileProviderError", "unknown argument"},
		{"arguments not an object", "read_file", json.RawMessage(`["/proj/main.py"]`), "FileProviderError", "expected an object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.use(t)
			before := h.depotState()
			msg := h.providerFail(tt.tool, tt.args, tt.errorType)
			if !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message %q does not contain %q", msg, tt.wantMsg)
			}
			h.mustBeUnchanged(tt.name, before)
		})
	}
}

func TestProviderListDirectory(t *testing.T) {
	h := providerHarness(t, nil)
	for _, tt := range []struct {
		name string
		args m
		want []string
	}{
		{"children", m{"directory_path": "/proj"}, []string{"/proj/README.md", "/proj/bin", "/proj/empty", "/proj/later.py", "/proj/latin.txt", "/proj/lib", "/proj/main.py"}},
		{"pattern", m{"directory_path": "/proj", "pattern": "*.py"}, []string{"/proj/later.py", "/proj/main.py"}},
		{"recursive pattern", m{"directory_path": "/proj", "pattern": "*.py", "recursive": true}, []string{"/proj/later.py", "/proj/lib/deep/test_a.py", "/proj/lib/util.py", "/proj/main.py"}},
		{"negated class", m{"directory_path": "/proj/lib", "pattern": "[!d]*", "recursive": true}, []string{"/proj/lib/deep/test_a.py", "/proj/lib/util.py"}},
		{"max_files", m{"directory_path": "/proj", "recursive": true, "max_files": 3}, []string{"/proj/README.md", "/proj/bin", "/proj/bin/tool.bin"}},
		{"max_files as string", m{"directory_path": "/proj", "max_files": "1"}, []string{"/proj/README.md"}},
		{"mount path", m{"directory_path": testMount + "/proj/lib"}, []string{testMount + "/proj/lib/deep", testMount + "/proj/lib/util.py"}},
		{"empty directory", m{"directory_path": "/proj/empty"}, []string{}},
		{"root", m{"directory_path": "/"}, []string{"/proj"}},
		{"mount point itself", m{"directory_path": testMount}, []string{testMount + "/proj"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.use(t)
			var got []string
			if err := json.Unmarshal([]byte(h.providerOK("list_directory", tt.args)), &got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProviderFindFiles(t *testing.T) {
	h := providerHarness(t, nil)
	for _, tt := range []struct {
		name string
		args m
		want []string
	}{
		{"recursive by default", m{"directory_path": "/proj", "patterns": []any{"*.py"}}, []string{"/proj/later.py", "/proj/lib/deep/test_a.py", "/proj/lib/util.py", "/proj/main.py"}},
		{"several patterns", m{"directory_path": "/proj", "patterns": []any{"test_?.py", "*.md"}}, []string{"/proj/README.md", "/proj/lib/deep/test_a.py"}},
		{"not recursive", m{"directory_path": "/proj", "patterns": []any{"*.py"}, "recursive": false}, []string{"/proj/later.py", "/proj/main.py"}},
		{"directories never match", m{"directory_path": "/proj", "patterns": []any{"lib", "*"}, "max_files": 2}, []string{"/proj/README.md", "/proj/bin/tool.bin"}},
		{"no patterns", m{"directory_path": "/proj", "patterns": []any{}}, []string{}},
		{"mount path", m{"directory_path": testMount + "/proj/lib", "patterns": []any{"*.py"}}, []string{testMount + "/proj/lib/deep/test_a.py", testMount + "/proj/lib/util.py"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.use(t)
			var got []string
			if err := json.Unmarshal([]byte(h.providerOK("find_files", tt.args)), &got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProviderFileExists(t *testing.T) {
	h := providerHarness(t, nil)
	for _, tt := range []struct {
		path string
		want string
	}{
		{"/proj/main.py", "true"},
		{"/proj", "true"},
		{"/", "true"},
		{"/proj/later.py", "true"},
		{testMount + "/proj/lib/util.py", "true"},
		{"/proj/nope", "false"},
		{"../../etc/passwd", "false"},
		{"/a\x00b", "false"},
		{"/etc/passwd", "false"},
	} {
		r := h.callRaw("file_exists", m{"path": tt.path})
		if r.isError || r.text != tt.want {
			t.Errorf("file_exists(%q) = %q (isError %v), want %s", tt.path, r.text, r.isError, tt.want)
		}
	}
}

func TestProviderFileStats(t *testing.T) {
	h := providerHarness(t, nil)
	type stats struct {
		Path         string `json:"path"`
		FileType     string `json:"file_type"`
		Size         int64  `json:"size"`
		ModifiedTime string `json:"modified_time"`
		IsReadable   bool   `json:"is_readable"`
		IsDirectory  bool   `json:"is_directory"`
	}
	for _, tt := range []struct {
		path string
		want stats
	}{
		{"/proj/main.py", stats{"/proj/main.py", "file", 15, "2024-04-10T15:30:00+00:00", true, false}},
		{testMount + "/proj/main.py", stats{testMount + "/proj/main.py", "file", 15, "2024-04-10T15:30:00+00:00", true, false}},
		{"/proj/later.py", stats{Path: "/proj/later.py", FileType: "file", Size: 42, IsReadable: false}},
		{"/proj/lib", stats{Path: "/proj/lib", FileType: "directory", IsReadable: true, IsDirectory: true}},
	} {
		r := h.callRaw("get_file_stats", m{"path": tt.path})
		if r.isError || len(r.structured) == 0 {
			t.Fatalf("get_file_stats(%s): %s", tt.path, r.text)
		}
		var got stats
		if err := json.Unmarshal(r.structured, &got); err != nil {
			t.Fatal(err)
		}
		if tt.want.ModifiedTime == "" {
			tt.want.ModifiedTime = got.ModifiedTime
		}
		if got != tt.want {
			t.Errorf("get_file_stats(%s) = %+v, want %+v", tt.path, got, tt.want)
		}
	}
}

func TestProviderFileHash(t *testing.T) {
	h := providerHarness(t, nil)
	data := []byte("print('hello')\n")
	md := md5.Sum(data)
	s1 := sha1.Sum(data)
	for _, tt := range []struct {
		args m
		want string
	}{
		{m{"file_path": "/proj/main.py"}, hex.EncodeToString(md[:])},
		{m{"file_path": "/proj/main.py", "algorithm": "md5"}, hex.EncodeToString(md[:])},
		{m{"file_path": "/proj/main.py", "algorithm": "SHA1"}, hex.EncodeToString(s1[:])},
		{m{"file_path": testMount + "/proj/main.py", "algorithm": "sha256"}, sum(data)},
	} {
		if got := h.providerOK("calculate_file_hash", tt.args); got != tt.want {
			t.Errorf("calculate_file_hash(%v) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestProviderReadOnly runs every provider tool and checks the store did
// not change.
func TestProviderReadOnly(t *testing.T) {
	h := providerHarness(t, nil)
	before := h.depotState()
	h.providerOK("read_file", m{"file_path": "/proj/main.py"})
	h.providerOK("read_file_binary", m{"file_path": "/proj/bin/tool.bin"})
	h.providerOK("list_directory", m{"directory_path": "/", "recursive": true})
	h.providerOK("file_exists", m{"path": "/proj"})
	h.providerOK("get_file_stats", m{"path": "/proj"})
	h.providerOK("calculate_file_hash", m{"file_path": "/proj/main.py"})
	h.providerOK("find_files", m{"directory_path": "/", "patterns": []any{"*"}})
	h.mustBeUnchanged("provider calls", before)
	if revs := h.appliedRevisions(); len(revs) != 0 {
		t.Errorf("read-only calls waited for the mount: %v", revs)
	}
}

// TestProviderProfileOff checks that the provider tools are absent when the
// profile is not served.
func TestProviderProfileOff(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{Tools: []mcpserver.Profile{mcpserver.ProfileGuide}, Settings: mcpserver.Settings{MountPoint: testMount}})
	for name := range listTools(t, h) {
		if !strings.HasPrefix(name, "guide_") {
			t.Errorf("tool %s served with the guide profile only", name)
		}
	}
}

// countingStore is a store that counts Open calls.
type countingStore struct {
	*bolt.Store
	opens atomic.Int64
}

func (s *countingStore) Open(ctx context.Context, p string) (store.Content, error) {
	s.opens.Add(1)
	return s.Store.Open(ctx, p)
}

// TestProviderSHA256FromEntry checks that calculate_file_hash answers
// sha256 from the stored hash, without opening the content, and md5 by
// reading it.
func TestProviderSHA256FromEntry(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	data := bytes.Repeat([]byte("x"), 3<<20)
	if _, err := st.Put(context.Background(), store.PutRequest{Path: "/big", Data: data}); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: st}
	srv := mcpserver.New(cs, &mcpserver.Options{Settings: mcpserver.Settings{Logger: slog.New(slog.DiscardHandler)}})
	t.Cleanup(func() { srv.Close() })
	c := startClient(t, mustInProcess(t, srv))
	hash := func(algorithm string) string {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = "calculate_file_hash"
		req.Params.Arguments = m{"file_path": "/big", "algorithm": algorithm}
		res, err := c.CallTool(testerCtx, req)
		if err != nil || res.IsError {
			t.Fatalf("calculate_file_hash %s: %v %+v", algorithm, err, res)
		}
		return res.Content[0].(mcp.TextContent).Text
	}
	if got := hash("sha256"); got != sum(data) || cs.opens.Load() != 0 {
		t.Errorf("sha256 %s after %d opens, want %s after none", got, cs.opens.Load(), sum(data))
	}
	md := md5.Sum(data)
	if got := hash("md5"); got != hex.EncodeToString(md[:]) || cs.opens.Load() != 1 {
		t.Errorf("md5 %s after %d opens", got, cs.opens.Load())
	}
}
