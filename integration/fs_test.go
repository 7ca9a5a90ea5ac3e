package integration_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fsWriteReply and the other reply types below hold the fields of the
// filesystem contract's replies.
type fsWriteReply struct {
	Success      bool   `json:"success"`
	Path         string `json:"path"`
	BytesWritten int    `json:"bytes_written"`
	Metadata     struct {
		Path     string `json:"path"`
		Modified string `json:"modified"`
		Size     int64  `json:"size"`
	} `json:"metadata"`
}

type fsReadReply struct {
	Content   string `json:"content"`
	Encoding  string `json:"encoding"`
	Size      int    `json:"size"`
	Truncated bool   `json:"truncated"`
	LineCount int    `json:"line_count"`
}

type fsSearchReply struct {
	TotalMatches  int `json:"total_matches"`
	FilesSearched int `json:"files_searched"`
	FilesMatched  int `json:"files_matched"`
	Matches       []struct {
		File    string `json:"file"`
		Matches []struct {
			LineNumber int    `json:"line_number"`
			Line       string `json:"line"`
			Context    []struct {
				LineNumber int    `json:"line_number"`
				Content    string `json:"content"`
			} `json:"context"`
		} `json:"matches"`
	} `json:"matches"`
}

// must fails t on err.
func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestFSContract drives the real binary over HTTP with a client that knows
// only the filesystem contract: every tool, every write mode, partial
// reads, a regexp search with context over 40 files in 10 directories it
// wrote (1,000 in a soak), a copy and a move of a file of several chunks,
// each error code it can provoke, and checks the results through the
// mount.
func TestFSContract(t *testing.T) {
	t.Parallel()
	// The search's files written as fast as possible: no rate limit.
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tools", "fs", "--rate-calls", "0"}})
	fc := fsClient{d.client}
	if _, err := callTool(d.client, "read_file", map[string]any{"file_path": "/x"}); err == nil {
		t.Error("read_file answered with the provider profile off")
	}

	t.Run("write modes", func(t *testing.T) {
		steps := []struct {
			args    map[string]any
			content string
			code    string
		}{
			{map[string]any{"path": "notes/todo.txt", "content": "one\n", "make_dirs": true}, "one\n", ""},
			{map[string]any{"path": "notes/todo.txt", "content": "two\n", "mode": "overwrite"}, "two\n", ""},
			{map[string]any{"path": "notes/todo.txt", "content": "three\n", "mode": "append"}, "two\nthree\n", ""},
			{map[string]any{"path": "notes/new.txt", "content": "new", "mode": "create"}, "new", ""},
			{map[string]any{"path": "notes/new.txt", "content": "other", "mode": "create"}, "new", "already_exists"},
			{map[string]any{"path": "notes/once.txt", "content": "once", "mode": "create_new"}, "once", ""},
			{map[string]any{"path": "notes/once.txt", "content": "again", "mode": "create_new"}, "once", "already_exists"},
			{map[string]any{"path": "notes/raw.bin", "content": base64.StdEncoding.EncodeToString([]byte{0, 255}), "encoding": "base64"}, "\x00\xff", ""},
		}
		for _, st := range steps {
			var out fsWriteReply
			err := fc.call("write", st.args, &out)
			var fe *fsError
			switch {
			case st.code != "" && (!errors.As(err, &fe) || fe.Code != st.code):
				t.Errorf("write %v: %v, want %s", st.args, err, st.code)
			case st.code == "" && err != nil:
				t.Errorf("write %v: %v", st.args, err)
			case st.code == "" && (!out.Success || out.Path != st.args["path"] || out.Metadata.Size != int64(len(st.content))):
				t.Errorf("write %v: reply %+v", st.args, out)
			}
			// Visible in the mount as soon as the call returned.
			if got, err := os.ReadFile(d.path("/" + st.args["path"].(string))); err != nil || string(got) != st.content {
				t.Errorf("after write %v the mount shows %q, %v; want %q", st.args, got, err, st.content)
			}
		}
	})

	t.Run("read", func(t *testing.T) {
		var lines []string
		for i := range 50 {
			lines = append(lines, fmt.Sprintf("line %d", i))
		}
		must(t, "write", fc.call("write", map[string]any{"path": "read/fifty.txt", "content": strings.Join(lines, "\n") + "\n", "make_dirs": true}, nil))
		var out fsReadReply
		must(t, "read", fc.call("read", map[string]any{"path": "read/fifty.txt", "start_line": 10, "end_line": 12}, &out))
		if out.Content != "line 10\nline 11\nline 12\n" || out.LineCount != 50 || out.Truncated || out.Encoding != "utf8" {
			t.Errorf("partial read %+v", out)
		}
		must(t, "read", fc.call("read", map[string]any{"path": "read/fifty.txt", "max_size": 10}, &out))
		if out.Content != "line 0\nlin" || !out.Truncated || out.Size != 10 {
			t.Errorf("read with max_size %+v", out)
		}
		must(t, "read", fc.call("read", map[string]any{"path": "notes/raw.bin"}, &out))
		if out.Encoding != "base64" || out.Content != base64.StdEncoding.EncodeToString([]byte{0, 255}) {
			t.Errorf("binary read %+v", out)
		}
	})

	t.Run("list mkdir info delete", func(t *testing.T) {
		var mk struct {
			Success bool   `json:"success"`
			Path    string `json:"path"`
		}
		must(t, "mkdir", fc.call("mkdir", map[string]any{"path": "dirs/a/b"}, &mk))
		if fi, err := os.Stat(d.path("/dirs/a/b")); err != nil || !fi.IsDir() || !mk.Success || mk.Path != "dirs/a/b" {
			t.Errorf("mkdir %+v; mount %v, %v", mk, fi, err)
		}
		must(t, "write", fc.call("write", map[string]any{"path": "dirs/a/.hidden", "content": "h"}, nil))
		var list struct {
			Entries []struct {
				Name     string `json:"name"`
				Path     string `json:"path"`
				Type     string `json:"type"`
				IsHidden bool   `json:"is_hidden"`
			} `json:"entries"`
		}
		must(t, "list", fc.call("list", map[string]any{"path": "dirs", "recursive": true, "include_hidden": true}, &list))
		var got []string
		for _, e := range list.Entries {
			got = append(got, e.Type+" "+e.Path)
		}
		if want := []string{"directory dirs/a", "file dirs/a/.hidden", "directory dirs/a/b"}; !slices.Equal(got, want) {
			t.Errorf("list %q, want %q", got, want)
		}
		var info struct {
			Exists bool   `json:"exists"`
			Type   string `json:"type"`
			Size   int64  `json:"size"`
		}
		must(t, "info", fc.call("info", map[string]any{"path": "notes/todo.txt"}, &info))
		if !info.Exists || info.Type != "file" || info.Size != 10 {
			t.Errorf("info %+v", info)
		}
		var del struct {
			Success bool   `json:"success"`
			Type    string `json:"type"`
		}
		must(t, "delete", fc.call("delete", map[string]any{"path": "dirs", "recursive": true}, &del))
		if _, err := os.Stat(d.path("/dirs")); !os.IsNotExist(err) || del.Type != "directory" {
			t.Errorf("after delete: %+v, mount %v", del, err)
		}
	})

	t.Run("search", func(t *testing.T) {
		n := bySoak(40, 1000)
		want := pushSearchTree(t, fc, "corpus", n)
		var out fsSearchReply
		must(t, "search", fc.call("search", map[string]any{
			"root_path": "corpus", "pattern": `^func (Handle|Serve)\w+\(`, "regex": true, "case_sensitive": true,
			"file_pattern": "*.go", "context_lines": 1, "max_results": 1000,
		}, &out))
		var got []string
		for _, f := range out.Matches {
			for _, m := range f.Matches {
				got = append(got, fmt.Sprintf("%s:%d:%s", f.File, m.LineNumber, m.Line))
				if len(m.Context) != 3 || m.Context[1].Content != m.Line || m.Context[0].LineNumber != m.LineNumber-1 ||
					!strings.HasPrefix(m.Context[0].Content, "// doc") || m.Context[2].Content != "\treturn nil" {
					t.Errorf("context of %s:%d: %+v", f.File, m.LineNumber, m.Context)
				}
			}
		}
		if !slices.Equal(got, want) || out.TotalMatches != len(want) || out.FilesSearched != n/2 || out.FilesMatched != n/4 {
			t.Errorf("search found %d lines in %d of %d files, want %d in %d of %d; first %q", out.TotalMatches, out.FilesMatched, out.FilesSearched, len(want), n/4, n/2, got[:min(3, len(got))])
		}
		// The same search as grep -rnE through the mount.
		grep := runProgram(t, "grep", "-rnE", "--include=*.go", `^func (Handle|Serve)\w+\(`, d.path("/corpus"))
		if n := strings.Count(grep, "\n"); n != len(want) {
			t.Errorf("grep through the mount finds %d lines, search %d", n, len(want))
		}
	})

	t.Run("copy and move a large file", func(t *testing.T) {
		// Three chunks, the last one partial; a copy that duplicated
		// the bytes would grow the database by 4 MiB, four times the
		// slack allowed below.
		big := pseudoRandom(bySoak(4<<20+12345, 32<<20), 77)
		pushChunked(d, "/large/original.bin", big, 2<<20, "large-1", 3)
		want := sha256hex(big)
		dbSize := func() int64 {
			fi, err := os.Stat(d.db)
			must(t, "stat database", err)
			return fi.Size()
		}
		before := dbSize()
		var cp struct {
			Success     bool  `json:"success"`
			BytesCopied int64 `json:"bytes_copied"`
		}
		must(t, "copy", fc.call("copy", map[string]any{"source": "large/original.bin", "destination": "large/copy.bin"}, &cp))
		if !cp.Success || cp.BytesCopied != int64(len(big)) {
			t.Errorf("copy %+v", cp)
		}
		if grown := dbSize() - before; grown > 1<<20 {
			t.Errorf("copying %d bytes grew the database by %d bytes", len(big), grown)
		}
		sha := func(p string) string { return strings.Fields(runProgram(t, "sha256sum", d.path(p)))[0] }
		if got := sha("/large/copy.bin"); got != want {
			t.Errorf("sha256sum of the copy %s, want %s", got, want)
		}
		must(t, "move", fc.call("move", map[string]any{"source": "large/copy.bin", "destination": "moved/deeper/big.bin"}, nil))
		if got := sha("/moved/deeper/big.bin"); got != want {
			t.Errorf("sha256sum of the moved copy %s, want %s", got, want)
		}
		if _, err := os.Stat(d.path("/large/copy.bin")); !os.IsNotExist(err) {
			t.Errorf("the moved file is still at its source: %v", err)
		}
		if got := sha("/large/original.bin"); got != want {
			t.Errorf("sha256sum of the original %s, want %s", got, want)
		}
		must(t, "copy tree", fc.call("copy", map[string]any{"source": "moved", "destination": "moved2"}, nil))
		if got := sha("/moved2/deeper/big.bin"); got != want {
			t.Errorf("sha256sum of the tree copy %s, want %s", got, want)
		}
	})

	t.Run("errors", func(t *testing.T) {
		before := snapshot(t, d.mount)
		for _, tt := range []struct {
			tool string
			args map[string]any
			code string
		}{
			{"read", map[string]any{"path": "../../etc/passwd"}, "path_validation_error"},
			{"write", map[string]any{"path": "a/../../../x", "content": "x"}, "path_validation_error"},
			{"list", map[string]any{"path": "nowhere"}, "not_found"},
			{"read", map[string]any{"path": "notes/missing.txt"}, "not_found"},
			{"write", map[string]any{"path": "nodir/f.txt", "content": "x"}, "not_found"},
			{"delete", map[string]any{"path": "nothing"}, "not_found"},
			{"copy", map[string]any{"source": "nothing", "destination": "x"}, "not_found"},
			{"write", map[string]any{"path": "notes/todo.txt", "content": "x", "mode": "create_new"}, "already_exists"},
			{"copy", map[string]any{"source": "notes/new.txt", "destination": "notes/todo.txt"}, "already_exists"},
			{"move", map[string]any{"source": "notes/new.txt", "destination": "notes/once.txt"}, "already_exists"},
			{"mkdir", map[string]any{"path": "notes/todo.txt"}, "already_exists"},
			{"delete", map[string]any{"path": "notes"}, "invalid_parameters"},
			{"read", map[string]any{"path": "notes"}, "invalid_parameters"},
			{"search", map[string]any{"root_path": "", "pattern": "(", "regex": true}, "invalid_parameters"},
			{"write", map[string]any{"path": "notes/x", "content": "x", "mode": "truncate"}, "invalid_parameters"},
			{"move", map[string]any{"source": "notes", "destination": "notes/inner"}, "invalid_parameters"},
			{"info", map[string]any{"path": "notes", "verbose": true}, "invalid_parameters"},
		} {
			err := fc.call(tt.tool, tt.args, nil)
			var fe *fsError
			if !errors.As(err, &fe) || fe.Code != tt.code || fe.Message == "" || fe.Details.Operation != tt.tool {
				t.Errorf("%s %v: %v, want %s", tt.tool, tt.args, err, tt.code)
				continue
			}
			if strings.Contains(fe.Message, d.mount) || strings.Contains(fe.Message, filepath.Dir(d.db)) {
				t.Errorf("%s: message reveals a host path: %s", tt.tool, fe.Message)
			}
		}
		if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
			t.Errorf("refused calls changed the depot:\n%s", diff)
		}
	})
}

// pushSearchTree writes n files under dir with the fs client, half of them
// Go files in which every other file has a matching function, and returns
// the lines search must find, in walk order, as "path:line:text".
func pushSearchTree(t testing.TB, fc fsClient, dir string, n int) []string {
	t.Helper()
	type file struct {
		path, content string
	}
	files := make([]file, n)
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "package p%d\n\n", i)
		for j := range 20 {
			fmt.Fprintf(&b, "var v%d = %q\n", j, "filler text to search through")
		}
		name := fmt.Sprintf("%s/d%02d/f%04d.txt", dir, i%10, i)
		if i%2 == 0 {
			name = fmt.Sprintf("%s/d%02d/f%04d.go", dir, i%10, i)
			if i%4 == 0 {
				fmt.Fprintf(&b, "// doc %d\nfunc HandleThing%d(x int) error {\n\treturn nil\n}\n", i, i)
			} else {
				fmt.Fprintf(&b, "// doc %d\nfunc helper%d() error {\n\treturn nil\n}\n", i, i)
			}
		}
		files[i] = file{name, b.String()}
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan file)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				if err := fc.call("write", map[string]any{"path": f.path, "content": f.content, "make_dirs": true}, nil); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^func (Handle|Serve)\w+\(`)
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.path, b.path) })
	var want []string
	for _, f := range files {
		if !strings.HasSuffix(f.path, ".go") {
			continue
		}
		for i, line := range strings.Split(f.content, "\n") {
			if re.MatchString(line) {
				want = append(want, fmt.Sprintf("%s:%d:%s", f.path, i+1, line))
			}
		}
	}
	return want
}

// TestFSRefusalsThroughBinary: through the real binary, an fs write over
// --max-file-size answers invalid_parameters with the limit in the
// details and changes nothing in the mount, and a delete of a non-empty
// directory without recursive is refused as invalid_parameters; neither is
// logged at ERROR nor audited as a system failure.
func TestFSRefusalsThroughBinary(t *testing.T) {
	t.Parallel()
	const limit = 4096
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{
		"--tools", "fs", "--max-file-size", fmt.Sprint(limit), "--audit-log", auditLog}})
	fc := fsClient{d.client}
	must(t, "write", fc.call("write", map[string]any{"path": "dir/small.txt", "content": "small", "make_dirs": true}, nil))
	before := snapshot(t, d.mount)

	var fe *fsError
	err := fc.call("write", map[string]any{"path": "dir/big.bin", "content": strings.Repeat("x", limit+1)}, nil)
	if !errors.As(err, &fe) || fe.Code != "invalid_parameters" || fe.Details.Limit != limit || fe.Details.Size != limit+1 {
		t.Errorf("write over the limit: %v (%+v), want invalid_parameters with limit %d", err, fe, limit)
	}
	err = fc.call("delete", map[string]any{"path": "dir"}, nil)
	if !errors.As(err, &fe) || fe.Code != "invalid_parameters" || !strings.Contains(fe.Message, "recursive") {
		t.Errorf("delete of a non-empty directory: %v, want invalid_parameters", err)
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused calls changed the mount:\n%s", diff)
	}

	if logs := d.logs.String(); strings.Contains(logs, "level=ERROR") || strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("a refused call is logged as an error:\n%s", logs)
	}
	raw, err := os.ReadFile(auditLog)
	must(t, "read the audit log", err)
	outcomes := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r struct {
			Tool  string `json:"tool"`
			Error string `json:"error"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.Error != "" {
			outcomes[r.Tool] = r.Error
		}
	}
	if outcomes["write"] != "limit" || outcomes["delete"] != "conflict" {
		t.Errorf("audited outcomes %v, want write: limit, delete: conflict", outcomes)
	}
}

// TestFSDenialIsPermissionError: a write the server's policy denies is
// answered with the contract's permission_denied code naming the rule,
// never internal_error (which tells a client that depotfs failed), and
// changes nothing.
func TestFSDenialIsPermissionError(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tools", "fs", "--deny", "/secret"}})
	fc := fsClient{d.client}
	before := snapshot(t, d.mount)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"write", map[string]any{"path": "secret/x.txt", "content": "x", "make_dirs": true}},
		{"mkdir", map[string]any{"path": "secret/dir"}},
		{"read", map[string]any{"path": "secret/x.txt"}},
	} {
		var fe *fsError
		err := fc.call(tc.tool, tc.args, nil)
		if !errors.As(err, &fe) || fe.Code != "permission_denied" || !strings.Contains(fe.Message, "/secret") {
			t.Errorf("%s %v: %v (%+v), want permission_denied naming the rule", tc.tool, tc.args, err, fe)
		}
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("denied calls changed the mount:\n%s", diff)
	}
}
