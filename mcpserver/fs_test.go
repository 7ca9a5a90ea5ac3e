package mcpserver_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store/bolt"
)

// fsFailure is the fs contract's error object.
type fsFailure struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details struct {
			Path       string `json:"path"`
			Operation  string `json:"operation"`
			Limit      int64  `json:"limit"`
			Size       int64  `json:"size"`
			RetryAfter int    `json:"retry_after"`
		} `json:"details"`
	} `json:"error"`
}

// fsOK calls an fs tool that must succeed and decodes its reply into out.
func (h *harness) fsOK(tool string, args any, out any) {
	h.t.Helper()
	r := h.callRaw(tool, args)
	if r.isError {
		h.t.Fatalf("%s(%v) failed: %s", tool, args, r.text)
	}
	if len(r.structured) == 0 {
		h.t.Fatalf("%s: no structured content", tool)
	}
	if out != nil {
		if err := json.Unmarshal(r.structured, out); err != nil {
			h.t.Fatalf("%s: %v", tool, err)
		}
	}
}

// fsFail calls an fs tool that must fail with code and returns the error.
func (h *harness) fsFail(tool string, args any, code string) fsFailure {
	h.t.Helper()
	r := h.callRaw(tool, args)
	if !r.isError {
		h.t.Fatalf("%s(%v) succeeded with %s, want %s", tool, args, r.text, code)
	}
	var f fsFailure
	if err := json.Unmarshal(r.structured, &f); err != nil {
		h.t.Fatalf("%s: error reply %s: %v", tool, r.text, err)
	}
	if f.Error.Code != code || f.Error.Message == "" || f.Error.Details.Operation != tool {
		h.t.Fatalf("%s(%v): error %+v, want code %s", tool, args, f.Error, code)
	}
	return f
}

// fsHarness serves the fs profile over a small tree.
func fsHarness(t *testing.T, opts *mcpserver.Options) *harness {
	t.Helper()
	o := mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount}}
	if opts != nil {
		o = *opts
	}
	o.Tools = []mcpserver.Profile{mcpserver.ProfileFS}
	h := newHarness(t, &o)
	h.seed("/docs/a.txt", []byte("alpha\nbeta\ngamma\n"))
	h.seed("/docs/.hidden", []byte("secret"))
	h.seed("/docs/.git/config", []byte("[core]\n"))
	h.seed("/docs/sub/b.md", []byte("# Beta\n"))
	h.seed("/bin/tool", []byte{0x7f, 'E', 'L', 'F', 0, 0, 1})
	h.seedPlaceholder("/docs/later.txt", 10)
	return h
}

type fsEntry struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Type     string `json:"type"`
	Size     *int64 `json:"size"`
	Modified string `json:"modified"`
	IsHidden bool   `json:"is_hidden"`
}

func TestFSList(t *testing.T) {
	h := fsHarness(t, nil)
	for _, tt := range []struct {
		name string
		args m
		want []string
	}{
		{"root", m{"path": ""}, []string{"bin", "docs"}},
		{"root by dot", m{"path": "."}, []string{"bin", "docs"}},
		{"children", m{"path": "docs"}, []string{"docs/a.txt", "docs/later.txt", "docs/sub"}},
		{"absolute", m{"path": "/docs/sub"}, []string{"docs/sub/b.md"}},
		{"hidden", m{"path": "docs", "include_hidden": true}, []string{"docs/.git", "docs/.hidden", "docs/a.txt", "docs/later.txt", "docs/sub"}},
		{"recursive", m{"path": "docs", "recursive": true}, []string{"docs/a.txt", "docs/later.txt", "docs/sub", "docs/sub/b.md"}},
		{"recursive hidden", m{"path": "docs", "recursive": true, "include_hidden": true, "pattern": "*i*"}, []string{"docs/.git", "docs/.git/config", "docs/.hidden"}},
		{"pattern", m{"path": "docs", "pattern": "*.txt", "recursive": true}, []string{"docs/a.txt", "docs/later.txt"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.use(t)
			var out struct {
				Entries   []fsEntry `json:"entries"`
				Truncated bool      `json:"truncated"`
			}
			h.fsOK("list", tt.args, &out)
			var got []string
			for _, e := range out.Entries {
				got = append(got, e.Path)
			}
			if !slices.Equal(got, tt.want) || out.Truncated {
				t.Errorf("got %q (truncated %v), want %q", got, out.Truncated, tt.want)
			}
		})
	}
	var out struct {
		Entries []fsEntry `json:"entries"`
	}
	h.fsOK("list", m{"path": "docs"}, &out)
	if a := out.Entries[0]; a.Name != "a.txt" || a.Type != "file" || a.Size == nil || *a.Size != 17 || a.Modified != "2024-04-10T15:30:00Z" || a.IsHidden {
		t.Errorf("entry %+v", a)
	}
	if d := out.Entries[2]; d.Type != "directory" || d.Size != nil || d.Modified == "" {
		t.Errorf("directory entry %+v", d)
	}
	out.Entries = nil
	h.fsOK("list", m{"path": "docs", "metadata": false, "include_hidden": true}, &out)
	if e := out.Entries[0]; e.Name != ".git" || !e.IsHidden || e.Size != nil || e.Modified != "" {
		t.Errorf("entry without metadata %+v", e)
	}
}

func TestFSListTruncated(t *testing.T) {
	h := fsHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, MaxListEntries: 2}})
	var out struct {
		Entries   []fsEntry `json:"entries"`
		Truncated bool      `json:"truncated"`
	}
	h.fsOK("list", m{"path": "/", "recursive": true}, &out)
	if len(out.Entries) != 2 || !out.Truncated {
		t.Errorf("%d entries, truncated %v", len(out.Entries), out.Truncated)
	}
}

type fsReadReply struct {
	Content   string `json:"content"`
	Encoding  string `json:"encoding"`
	Size      int    `json:"size"`
	Truncated bool   `json:"truncated"`
	LineCount int    `json:"line_count"`
	Metadata  struct {
		Path     string `json:"path"`
		Modified string `json:"modified"`
		Size     int64  `json:"size"`
	} `json:"metadata"`
}

func TestFSRead(t *testing.T) {
	h := fsHarness(t, nil)
	h.seed("/lines.txt", []byte("l0\nl1\nl2\nl3\nl4"))
	h.seed("/utf8.txt", []byte("ééé"))
	for _, tt := range []struct {
		name      string
		args      m
		content   string
		encoding  string
		truncated bool
	}{
		{"whole", m{"path": "docs/a.txt"}, "alpha\nbeta\ngamma\n", "utf8", false},
		{"lines", m{"path": "lines.txt", "start_line": 1, "end_line": 2}, "l1\nl2\n", "utf8", false},
		{"from a line", m{"path": "lines.txt", "start_line": 3}, "l3\nl4", "utf8", false},
		{"up to a line", m{"path": "lines.txt", "end_line": 0}, "l0\n", "utf8", false},
		{"end beyond the file", m{"path": "lines.txt", "start_line": 4, "end_line": 99}, "l4", "utf8", false},
		{"start beyond the file", m{"path": "lines.txt", "start_line": 10}, "", "utf8", false},
		{"max_size", m{"path": "lines.txt", "max_size": 4}, "l0\nl", "utf8", true},
		{"max_size within lines", m{"path": "lines.txt", "start_line": 1, "end_line": 3, "max_size": 5}, "l1\nl2", "utf8", true},
		{"cut on a character", m{"path": "utf8.txt", "max_size": 3}, "é", "utf8", true},
		{"base64", m{"path": "docs/a.txt", "encoding": "base64"}, base64.StdEncoding.EncodeToString([]byte("alpha\nbeta\ngamma\n")), "base64", false},
		{"binary", m{"path": "docs/sub/b.md", "encoding": "binary"}, base64.StdEncoding.EncodeToString([]byte("# Beta\n")), "base64", false},
		{"detected binary", m{"path": "bin/tool"}, base64.StdEncoding.EncodeToString([]byte{0x7f, 'E', 'L', 'F', 0, 0, 1}), "base64", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.use(t)
			var out fsReadReply
			h.fsOK("read", tt.args, &out)
			if out.Content != tt.content || out.Encoding != tt.encoding || out.Truncated != tt.truncated {
				t.Errorf("read %q %s truncated %v, want %q %s %v", out.Content, out.Encoding, out.Truncated, tt.content, tt.encoding, tt.truncated)
			}
		})
	}
	var out fsReadReply
	h.fsOK("read", m{"path": "lines.txt", "start_line": 1, "end_line": 1}, &out)
	if out.LineCount != 5 || out.Size != 3 || out.Metadata.Size != 14 || out.Metadata.Path != "lines.txt" {
		t.Errorf("reply %+v", out)
	}
	h.fsOK("read", m{"path": "docs/a.txt"}, &out)
	if out.LineCount != 3 || out.Metadata.Modified != "2024-04-10T15:30:00Z" {
		t.Errorf("reply %+v", out)
	}
}

type fsWriteReply struct {
	Success      bool   `json:"success"`
	Path         string `json:"path"`
	BytesWritten int    `json:"bytes_written"`
	Status       string `json:"status"`
	SHA256       string `json:"sha256"`
	MountPath    string `json:"mount_path"`
	Metadata     struct {
		Size int64 `json:"size"`
	} `json:"metadata"`
}

func TestFSWriteModes(t *testing.T) {
	h := fsHarness(t, nil)
	steps := []struct {
		name     string
		args     m
		status   string
		content  string
		failCode string
	}{
		{"overwrite creates", m{"path": "w/f.txt", "content": "one\n", "make_dirs": true}, "created", "one\n", ""},
		{"overwrite replaces", m{"path": "w/f.txt", "content": "two\n", "mode": "overwrite"}, "updated", "two\n", ""},
		{"append", m{"path": "w/f.txt", "content": "three\n", "mode": "append"}, "updated", "two\nthree\n", ""},
		{"append creates", m{"path": "w/new.log", "content": "first\n", "mode": "append"}, "created", "first\n", ""},
		{"create", m{"path": "w/c.txt", "content": "c", "mode": "create"}, "created", "c", ""},
		{"create again with the same bytes", m{"path": "w/c.txt", "content": "c", "mode": "create"}, "unchanged", "c", ""},
		{"create over other bytes", m{"path": "w/c.txt", "content": "other", "mode": "create"}, "", "c", "already_exists"},
		{"create_new", m{"path": "w/n.txt", "content": "n", "mode": "create_new"}, "created", "n", ""},
		{"create_new again", m{"path": "w/n.txt", "content": "n", "mode": "create_new"}, "", "n", "already_exists"},
		{"base64", m{"path": "w/b.bin", "content": base64.StdEncoding.EncodeToString([]byte{0, 1, 2}), "encoding": "base64"}, "created", "\x00\x01\x02", ""},
		{"empty", m{"path": "w/empty", "content": ""}, "created", "", ""},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			h.use(t)
			p := "/" + st.args["path"].(string)
			if st.failCode != "" {
				before := h.depotState()
				h.fsFail("write", st.args, st.failCode)
				h.mustBeUnchanged(st.name, before)
			} else {
				applied := len(h.appliedRevisions())
				var out fsWriteReply
				h.fsOK("write", st.args, &out)
				if !out.Success || out.Status != st.status || out.Path != st.args["path"] || out.MountPath != testMount+p || out.SHA256 != sum([]byte(st.content)) || out.Metadata.Size != int64(len(st.content)) {
					t.Errorf("reply %+v, want status %s", out, st.status)
				}
				if len(h.appliedRevisions()) != applied+1 {
					t.Error("the write did not wait for the mount")
				}
			}
			if got := string(h.read(p)); got != st.content {
				t.Errorf("file holds %q, want %q", got, st.content)
			}
		})
	}
}

func TestFSWriteKeepsMode(t *testing.T) {
	h := fsHarness(t, nil)
	h.ok("guide_cache_file", m{"path": "/x.sh", "content": "#!/bin/sh\n", "mode": "0755"}, nil)
	h.fsOK("write", m{"path": "x.sh", "content": "#!/bin/sh\necho\n"}, nil)
	h.fsOK("write", m{"path": "x.sh", "content": "exit 0\n", "mode": "append"}, nil)
	if e, _ := h.stat("/x.sh"); e.Mode != 0o755 || string(h.read("/x.sh")) != "#!/bin/sh\necho\nexit 0\n" {
		t.Errorf("after writes: mode %o, content %q", e.Mode, h.read("/x.sh"))
	}
}

// TestFSAppendConcurrent appends from many calls at once: none is lost.
func TestFSAppendConcurrent(t *testing.T) {
	h := fsHarness(t, nil)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := m{"path": "log.txt", "content": fmt.Sprintf("line %02d\n", i), "mode": "append"}
			r, err := callTool(h, "write", req)
			if err != nil || r.IsError {
				errs <- fmt.Sprintf("append %d: %v %v", i, err, r)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	lines := strings.Split(strings.TrimSuffix(string(h.read("/log.txt")), "\n"), "\n")
	slices.Sort(lines)
	if len(lines) != n || lines[0] != "line 00" || lines[n-1] != fmt.Sprintf("line %02d", n-1) {
		t.Errorf("log holds %d lines: %q", len(lines), lines)
	}
}

func TestFSMkdirDelete(t *testing.T) {
	h := fsHarness(t, nil)
	var mk struct {
		Success bool   `json:"success"`
		Path    string `json:"path"`
		Created bool   `json:"created"`
	}
	h.fsOK("mkdir", m{"path": "new/deep/dir"}, &mk)
	if !mk.Success || !mk.Created || mk.Path != "new/deep/dir" {
		t.Errorf("mkdir %+v", mk)
	}
	if e, ok := h.stat("/new/deep/dir"); !ok || !e.IsDir() || !e.Explicit {
		t.Errorf("directory %+v", e)
	}
	h.fsOK("mkdir", m{"path": "new/deep/dir"}, &mk)
	if mk.Created {
		t.Error("mkdir of an existing directory says created")
	}
	h.fsOK("mkdir", m{"path": "new/other", "recursive": false}, nil)

	var del struct {
		Success bool   `json:"success"`
		Path    string `json:"path"`
		Type    string `json:"type"`
	}
	h.fsOK("delete", m{"path": "docs/a.txt"}, &del)
	if del.Type != "file" || del.Path != "docs/a.txt" {
		t.Errorf("delete %+v", del)
	}
	h.fsOK("delete", m{"path": "new/other"}, &del)
	if del.Type != "directory" {
		t.Errorf("delete %+v", del)
	}
	h.fsOK("delete", m{"path": "docs", "recursive": true}, &del)
	if _, ok := h.stat("/docs/sub/b.md"); ok {
		t.Error("recursive delete left /docs/sub/b.md")
	}
	h.fsOK("delete", m{"path": "docs", "force": true}, &del)
	if del.Type != "none" {
		t.Errorf("forced delete of a missing path: %+v", del)
	}
}

type fsCopyReply struct {
	Success     bool   `json:"success"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
	BytesCopied *int64 `json:"bytes_copied"`
	Entries     int    `json:"entries"`
}

func TestFSCopyMove(t *testing.T) {
	h := fsHarness(t, nil)
	var out fsCopyReply
	h.fsOK("copy", m{"source": "docs/a.txt", "destination": "copies/a.txt"}, &out)
	if !out.Success || out.Source != "docs/a.txt" || out.Destination != "copies/a.txt" || out.BytesCopied == nil || *out.BytesCopied != 17 || out.Entries != 1 {
		t.Errorf("copy %+v", out)
	}
	h.fsOK("copy", m{"source": "/docs", "destination": "/tree"}, &out)
	if *out.BytesCopied != 17+6+7+7 || out.Entries != 8 {
		t.Errorf("tree copy %+v", out)
	}
	if string(h.read("/tree/sub/b.md")) != "# Beta\n" || string(h.read("/tree/.git/config")) != "[core]\n" {
		t.Error("tree copy differs")
	}
	h.fsOK("copy", m{"source": "docs/sub/b.md", "destination": "copies/a.txt", "overwrite": true}, nil)
	if string(h.read("/copies/a.txt")) != "# Beta\n" {
		t.Error("overwrite did not replace the file")
	}

	out = fsCopyReply{}
	h.fsOK("move", m{"source": "tree/sub", "destination": "moved/sub"}, &out)
	if out.BytesCopied != nil || out.Entries != 2 || out.Destination != "moved/sub" {
		t.Errorf("move %+v", out)
	}
	if _, ok := h.stat("/tree/sub"); ok {
		t.Error("move left its source")
	}
	if string(h.read("/moved/sub/b.md")) != "# Beta\n" {
		t.Error("moved file differs")
	}
	h.fsOK("move", m{"source": "copies/a.txt", "destination": "docs/a.txt", "overwrite": true}, nil)
	if string(h.read("/docs/a.txt")) != "# Beta\n" {
		t.Error("move with overwrite did not replace the file")
	}
}

type fsInfoReply struct {
	Exists      bool   `json:"exists"`
	Type        string `json:"type"`
	Name        string `json:"name"`
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	Created     string `json:"created"`
	Modified    string `json:"modified"`
	Accessed    string `json:"accessed"`
	Permissions *struct {
		Readable   bool `json:"readable"`
		Writable   bool `json:"writable"`
		Executable bool `json:"executable"`
	} `json:"permissions"`
	IsHidden  bool   `json:"is_hidden"`
	SHA256    string `json:"sha256"`
	MountPath string `json:"mount_path"`
}

func TestFSInfo(t *testing.T) {
	h := fsHarness(t, nil)
	var out fsInfoReply
	h.fsOK("info", m{"path": "docs/a.txt"}, &out)
	if !out.Exists || out.Type != "file" || out.Name != "a.txt" || out.Path != "docs/a.txt" || out.Size != 17 ||
		out.Modified != "2024-04-10T15:30:00Z" || out.Created == "" || out.Accessed == "" || out.Permissions == nil ||
		!out.Permissions.Readable || out.Permissions.Executable || out.IsHidden || out.SHA256 != sum([]byte("alpha\nbeta\ngamma\n")) ||
		out.MountPath != testMount+"/docs/a.txt" {
		t.Errorf("info %+v", out)
	}
	h.fsOK("info", m{"path": "docs/.hidden"}, &out)
	if !out.IsHidden {
		t.Errorf("info %+v", out)
	}
	h.fsOK("info", m{"path": "docs/later.txt"}, &out)
	if out.Permissions.Readable || out.Size != 10 {
		t.Errorf("info of a placeholder %+v", out)
	}
	out = fsInfoReply{}
	h.fsOK("info", m{"path": "docs"}, &out)
	if out.Type != "directory" || out.Size != 0 || !out.Permissions.Executable {
		t.Errorf("info of a directory %+v", out)
	}
	out = fsInfoReply{}
	h.fsOK("info", m{"path": "nope/x"}, &out)
	if out.Exists || out.Path != "nope/x" || out.Type != "" || out.Permissions != nil {
		t.Errorf("info of a missing path %+v", out)
	}
}

type fsSearchReply struct {
	TotalMatches  int  `json:"total_matches"`
	FilesSearched int  `json:"files_searched"`
	FilesMatched  int  `json:"files_matched"`
	Truncated     bool `json:"truncated"`
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
	FilesSkipped struct {
		Binary   int `json:"binary"`
		TooLarge int `json:"too_large"`
		Absent   int `json:"absent"`
	} `json:"files_skipped"`
}

// lines flattens a search reply into "file:line:text".
func (r fsSearchReply) lines() []string {
	var out []string
	for _, f := range r.Matches {
		for _, m := range f.Matches {
			out = append(out, fmt.Sprintf("%s:%d:%s", f.File, m.LineNumber, m.Line))
		}
	}
	return out
}

func TestFSSearch(t *testing.T) {
	h := fsHarness(t, nil)
	for _, tt := range []struct {
		name string
		args m
		want []string
	}{
		{"literal, case-insensitive by default", m{"root_path": "", "pattern": "BETA"}, []string{"docs/a.txt:2:beta", "docs/sub/b.md:1:# Beta"}},
		{"case-sensitive", m{"root_path": "docs", "pattern": "Beta", "case_sensitive": true}, []string{"docs/sub/b.md:1:# Beta"}},
		{"regexp", m{"root_path": "/", "pattern": `^(al|gam)`, "regex": true}, []string{"docs/a.txt:1:alpha", "docs/a.txt:3:gamma"}},
		{"file pattern", m{"root_path": "docs", "pattern": "beta", "file_pattern": "*.md"}, []string{"docs/sub/b.md:1:# Beta"}},
		{"not recursive", m{"root_path": "docs", "pattern": "beta", "recursive": false}, []string{"docs/a.txt:2:beta"}},
		{"hidden files are searched", m{"root_path": "docs", "pattern": "core"}, []string{"docs/.git/config:1:[core]"}},
		{"max results", m{"root_path": "", "pattern": "a", "max_results": 2}, []string{"docs/a.txt:1:alpha", "docs/a.txt:2:beta"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.use(t)
			var out fsSearchReply
			h.fsOK("search", tt.args, &out)
			if got := out.lines(); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if out.TotalMatches != len(tt.want) || out.Truncated != (tt.args["max_results"] == len(tt.want)) {
				t.Errorf("total %d truncated %v", out.TotalMatches, out.Truncated)
			}
		})
	}
	var out fsSearchReply
	h.fsOK("search", m{"root_path": "docs", "pattern": "beta", "context_lines": 1, "case_sensitive": true}, &out)
	ctx := out.Matches[0].Matches[0].Context
	if len(ctx) != 3 || ctx[0].LineNumber != 1 || ctx[0].Content != "alpha" || ctx[2].Content != "gamma" {
		t.Errorf("context %+v", ctx)
	}
	h.fsOK("search", m{"root_path": "/", "pattern": "E"}, &out)
	if out.FilesSkipped.Binary != 1 || out.FilesSkipped.Absent != 1 || out.FilesSearched != 4 || out.Matches[0].Matches[0].Context == nil {
		t.Errorf("reply %+v", out)
	}
}

// TestFSRefused sends calls every fs tool must refuse, one per error code
// and kind of problem, and checks that each changes nothing.
func TestFSRefused(t *testing.T) {
	h := fsHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, MaxContentBytes: 16, MaxReadBytes: 64}})
	h.seed("/full/f", []byte(strings.Repeat("x", 60)))
	for _, tt := range []struct {
		name, tool string
		args       any
		code       string
		wantMsg    string
		wantPath   string
	}{
		{"escape", "read", m{"path": "../etc/passwd"}, "path_validation_error", "outside", ""},
		{"escape by backslash", "write", m{"path": `a\..\..\x`, "content": "x"}, "path_validation_error", "outside", ""},
		{"NUL", "info", m{"path": "a\x00b"}, "path_validation_error", "NUL", ""},
		{"escape in a destination", "copy", m{"source": "docs/a.txt", "destination": "../../x"}, "path_validation_error", "outside", "docs/a.txt"},
		{"list missing", "list", m{"path": "nope"}, "not_found", "does not exist", "nope"},
		{"read missing", "read", m{"path": "docs/nope.txt"}, "not_found", "does not exist", "docs/nope.txt"},
		{"read a placeholder", "read", m{"path": "docs/later.txt"}, "not_found", "not arrived", "docs/later.txt"},
		{"write without parent", "write", m{"path": "nodir/f.txt", "content": "x"}, "not_found", "make_dirs", "nodir"},
		{"append to a placeholder", "write", m{"path": "docs/later.txt", "content": "x", "mode": "append"}, "not_found", "not arrived", "docs/later.txt"},
		{"mkdir without parent", "mkdir", m{"path": "a/b", "recursive": false}, "not_found", "make_dirs", "a"},
		{"delete missing", "delete", m{"path": "nope"}, "not_found", "does not exist", "nope"},
		{"copy missing", "copy", m{"source": "nope", "destination": "x"}, "not_found", "does not exist", "nope"},
		{"move missing", "move", m{"source": "nope", "destination": "x"}, "not_found", "does not exist", "nope"},
		{"search missing", "search", m{"root_path": "nope", "pattern": "x"}, "not_found", "does not exist", "nope"},
		{"create_new over a file", "write", m{"path": "docs/a.txt", "content": "x", "mode": "create_new"}, "already_exists", "already exists", "docs/a.txt"},
		{"mkdir over a file", "mkdir", m{"path": "docs/a.txt"}, "already_exists", "file already exists", "docs/a.txt"},
		{"copy over a file", "copy", m{"source": "docs/sub/b.md", "destination": "docs/a.txt"}, "already_exists", "overwrite", "docs/a.txt"},
		{"copy over a directory", "copy", m{"source": "docs/a.txt", "destination": "docs/sub", "overwrite": true}, "already_exists", "directory", "docs/sub"},
		{"move a tree over a tree", "move", m{"source": "docs/sub", "destination": "full", "overwrite": true}, "already_exists", "never replaced", "full"},
		{"move over a file", "move", m{"source": "docs/sub/b.md", "destination": "docs/a.txt"}, "already_exists", "overwrite", "docs/a.txt"},
		{"list a file", "list", m{"path": "docs/a.txt"}, "invalid_parameters", "not a directory", "docs/a.txt"},
		{"read a directory", "read", m{"path": "docs"}, "invalid_parameters", "is a directory", "docs"},
		{"end before start", "read", m{"path": "docs/a.txt", "start_line": 3, "end_line": 1}, "invalid_parameters", "end_line", "docs/a.txt"},
		{"max_size over the limit", "read", m{"path": "docs/a.txt", "max_size": 65}, "invalid_parameters", "above the maximum 64", "docs/a.txt"},
		{"unknown encoding", "read", m{"path": "docs/a.txt", "encoding": "utf16"}, "invalid_parameters", "must be one of", "docs/a.txt"},
		{"write a directory", "write", m{"path": "docs", "content": "x"}, "invalid_parameters", "either a file or a directory", "docs"},
		{"write the root", "write", m{"path": "/", "content": "x"}, "invalid_parameters", "root", "."},
		{"write below a file", "write", m{"path": "docs/a.txt/x", "content": "x", "make_dirs": true}, "invalid_parameters", "either a file or a directory", "docs/a.txt/x"},
		{"content too large", "write", m{"path": "big", "content": strings.Repeat("x", 17)}, "invalid_parameters", "exceeds the limit", "big"},
		{"append too large", "write", m{"path": "full/f", "content": strings.Repeat("x", 16), "mode": "append"}, "invalid_parameters", "limit of 64 for appends", "full/f"},
		{"bad base64", "write", m{"path": "f", "content": "***", "encoding": "base64"}, "invalid_parameters", "base64", "f"},
		{"unknown mode", "write", m{"path": "f", "content": "x", "mode": "truncate"}, "invalid_parameters", "must be one of", "f"},
		{"content missing", "write", m{"path": "f"}, "invalid_parameters", "content: required", "f"},
		{"delete a non-empty directory", "delete", m{"path": "docs"}, "invalid_parameters", "not empty", "docs"},
		{"delete the root", "delete", m{"path": "/", "recursive": true}, "invalid_parameters", "root", "."},
		{"copy a directory without recursive", "copy", m{"source": "docs", "destination": "d2", "recursive": false}, "invalid_parameters", "set recursive", "docs"},
		{"copy into itself", "copy", m{"source": "docs", "destination": "docs/sub/x"}, "invalid_parameters", "inside the source", "docs"},
		{"move onto itself", "move", m{"source": "docs", "destination": "/docs"}, "invalid_parameters", "inside the source", "docs"},
		{"bad regexp", "search", m{"root_path": "", "pattern": "(", "regex": true}, "invalid_parameters", "invalid search pattern", "."},
		{"empty pattern", "search", m{"root_path": "", "pattern": ""}, "invalid_parameters", "empty", "."},
		{"search a file", "search", m{"root_path": "docs/a.txt", "pattern": "x"}, "invalid_parameters", "not a directory", "docs/a.txt"},
		{"max_results", "search", m{"root_path": "", "pattern": "x", "max_results": 0}, "invalid_parameters", "below the minimum 1", "."},
		{"context_lines", "search", m{"root_path": "", "pattern": "x", "context_lines": 101}, "invalid_parameters", "above the maximum 100", "."},
		{"bad file_pattern", "search", m{"root_path": "", "pattern": "x", "file_pattern": "[x"}, "invalid_parameters", "not a valid pattern", "."},
		{"mistyped", "list", m{"path": "docs", "recursive": "yes"}, "invalid_parameters", "expected boolean", "docs"},
		{"unknown argument", "delete", m{"path": "docs", "dry_run": true}, "invalid_parameters", `unknown argument(s) "dry_run"`, "docs"},
		{"path missing", "info", m{}, "invalid_parameters", "path: required", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.use(t)
			before := h.depotState()
			applied := len(h.appliedRevisions())
			f := h.fsFail(tt.tool, tt.args, tt.code)
			if !strings.Contains(f.Error.Message, tt.wantMsg) {
				t.Errorf("message %q does not contain %q", f.Error.Message, tt.wantMsg)
			}
			if f.Error.Details.Path != tt.wantPath {
				t.Errorf("details.path %q, want %q", f.Error.Details.Path, tt.wantPath)
			}
			h.mustBeUnchanged(tt.name, before)
			if len(h.appliedRevisions()) != applied {
				t.Error("a refused call waited for the mount")
			}
		})
	}
}

// TestFSWriteOverFileLimit: a write over the depot's file size limit is
// invalid_parameters with the limit in the details, and changes nothing,
// whether the edge check refuses it (content over Options.MaxFileBytes) or
// the store does (an append that makes the file too large).
func TestFSWriteOverFileLimit(t *testing.T) {
	const limit = 16
	h := startHarness(t, harnessConfig{
		opts:  &mcpserver.Options{Tools: []mcpserver.Profile{mcpserver.ProfileFS}, Settings: mcpserver.Settings{MountPoint: testMount, MaxFileBytes: limit}},
		store: &bolt.Options{MaxFileBytes: limit},
	})
	h.seed("/f.txt", []byte("0123456789"))
	before := h.depotState()
	f := h.fsFail("write", m{"path": "big.txt", "content": strings.Repeat("x", limit+1)}, "invalid_parameters")
	if f.Error.Details.Limit != limit || f.Error.Details.Size != limit+1 || f.Error.Details.Path != "big.txt" ||
		!strings.Contains(f.Error.Message, "file size limit of 16 bytes") {
		t.Errorf("edge refusal %+v", f.Error)
	}
	f = h.fsFail("write", m{"path": "f.txt", "content": "0123456789", "mode": "append"}, "invalid_parameters")
	if f.Error.Details.Limit != limit || !strings.Contains(f.Error.Message, "size limits") {
		t.Errorf("store refusal %+v", f.Error)
	}
	h.mustBeUnchanged("writes over the file size limit", before)
	if strings.Contains(h.logs.String(), `"level":"ERROR"`) {
		t.Errorf("a refused write is logged as an error:\n%s", h.logs)
	}
}

// TestFSDeleteNotEmpty: deleting a directory with entries without recursive
// is invalid_parameters, logged as a warning and audited as a conflict,
// never as a system failure.
func TestFSDeleteNotEmpty(t *testing.T) {
	rec := &lastRecord{}
	h := fsHarness(t, &mcpserver.Options{Audit: rec, Settings: mcpserver.Settings{MountPoint: testMount}})
	before := h.depotState()
	h.fsFail("delete", m{"path": "docs"}, "invalid_parameters")
	h.mustBeUnchanged("delete of a non-empty directory", before)
	if _, r := rec.get(); r.Tool != "delete" || r.Error != "conflict" {
		t.Errorf("audit record %+v, want error conflict", r)
	}
	if logs := h.logs.String(); strings.Contains(logs, `"level":"ERROR"`) || !strings.Contains(logs, `"outcome":"conflict"`) {
		t.Errorf("log of the refused delete:\n%s", logs)
	}
}

// TestRateLimitedEveryContract: a call over the caller's rate limit maps
// explicitly in every contract, with the retry hint: rate_limited with
// retry_after (guide), PermissionError (provider), permission_denied with
// details.retry_after (fs).
func TestRateLimitedEveryContract(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	h := newHarness(t, &mcpserver.Options{
		Tools:    mcpserver.Profiles(),
		Rate:     ratelimit.Limits{Calls: 0.5, CallBurst: 1, Bytes: -1},
		Settings: mcpserver.Settings{MountPoint: testMount, Now: clock, RateLocal: true},
	})
	h.fsOK("list", m{"path": "."}, nil)
	env := h.fail("guide_cache_stats", m{}, "rate_limited")
	if !strings.Contains(env.Error.Instruction, "Wait 2 second(s)") {
		t.Errorf("guide: %+v", env.Error)
	}
	r := h.callRaw("read_file", m{"file_path": "/x"})
	var pe struct {
		Error     string `json:"error"`
		ErrorType string `json:"error_type"`
	}
	if err := json.Unmarshal(r.structured, &pe); err != nil || !r.isError || pe.ErrorType != "PermissionError" || !strings.Contains(pe.Error, "retry after 2 seconds") {
		t.Errorf("provider: %s (%v)", r.text, err)
	}
	f := h.fsFail("list", m{"path": "."}, "permission_denied")
	if f.Error.Details.RetryAfter != 2 || !strings.Contains(f.Error.Message, "retry after 2 seconds") {
		t.Errorf("fs: %+v", f.Error)
	}
}
