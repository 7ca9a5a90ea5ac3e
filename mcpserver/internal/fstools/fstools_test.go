package fstools_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver/internal/fstools"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/mcpserver/internal/tool/tooltest"
	"github.com/depotfs/depotfs/store/bolt"
)

// newDepot serves the fs tools over a bolt store in a temporary directory
// holding /f/a.txt (three lines), /f/dir/b.txt and /f/.hidden.
func newDepot(t *testing.T) *tooltest.Harness {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), &bolt.Options{KeepVersions: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h := tooltest.New(t, st, nil, func(env *tool.Env, _ *tool.Runtime) []tool.Tool { return fstools.Tools(env) })
	h.Put("/f/a.txt", "one\ntwo\nthree\n")
	h.Put("/f/dir/b.txt", "beta\n")
	h.Put("/f/.hidden", "h")
	return h
}

// fsError is the contract's error object.
type fsError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details struct {
			Operation string `json:"operation"`
			Path      string `json:"path"`
		} `json:"details"`
	} `json:"error"`
}

// TestFSRefusals: the argument rules of the fs tools, each refusal with
// the contract's code and a message that names the fix, over a real
// store; a refused call changes nothing.
func TestFSRefusals(t *testing.T) {
	t.Parallel()
	h := newDepot(t)
	for _, c := range []struct {
		name, tool, args, code string
		want                   []string
	}{
		{"read without path", "read", `{}`, "invalid_parameters", []string{"path", "required"}},
		{"read a directory", "read", `{"path": "f/dir"}`, "invalid_parameters", []string{"directory", "list"}},
		{"read missing", "read", `{"path": "f/none.txt"}`, "not_found", []string{"f/none.txt"}},
		{"read end before start", "read", `{"path": "f/a.txt", "start_line": 2, "end_line": 1}`, "invalid_parameters", []string{"inclusive"}},
		{"read max_size over the limit", "read", `{"path": "f/a.txt", "max_size": 99999999999}`, "invalid_parameters", []string{"max_size"}},
		{"read unknown encoding", "read", `{"path": "f/a.txt", "encoding": "latin1"}`, "invalid_parameters", []string{"encoding"}},
		{"read a future revision", "read", `{"path": "f/a.txt", "revision": 999999}`, "invalid_parameters", []string{"current revision"}},
		{"read at the mount path", "read", `{"path": "/mnt/depot/f/a.txt"}`, "invalid_parameters", []string{`"f/a.txt"`}},
		{"read climbing out", "read", `{"path": "../x"}`, "path_validation_error", []string{"outside"}},
		{"read snapshot unknown", "read", `{"path": "f/a.txt", "snapshot": "nosuch"}`, "invalid_parameters", []string{"guide_snapshot"}},
		{"write without content", "write", `{"path": "f/w.txt"}`, "invalid_parameters", []string{"content"}},
		{"write a bad mode", "write", `{"path": "f/w.txt", "content": "x", "mode": "replace"}`, "invalid_parameters", []string{"overwrite", "append"}},
		{"write create_new over a file", "write", `{"path": "f/a.txt", "content": "x", "mode": "create_new"}`, "already_exists", []string{"f/a.txt"}},
		{"write over a directory", "write", `{"path": "f/dir", "content": "x"}`, "invalid_parameters", []string{"directory"}},
		{"write at the mount path", "write", `{"path": "/mnt/depot/f/w.txt", "content": "x"}`, "invalid_parameters", []string{`"f/w.txt"`}},
		{"write under .snapshots", "write", `{"path": ".snapshots/s/x", "content": "x"}`, "path_validation_error", []string{".snapshots", "read-only", "guide_restore"}},
		{"write under .snapshots, making directories", "write", `{"path": ".snapshots/s/x", "content": "x", "make_dirs": true}`, "path_validation_error", []string{".snapshots"}},
		{"mkdir under .snapshots", "mkdir", `{"path": ".snapshots/s"}`, "path_validation_error", []string{".snapshots"}},
		{"mkdir over a file", "mkdir", `{"path": "f/a.txt"}`, "", []string{"f/a.txt"}},
		{"delete a non-empty directory", "delete", `{"path": "f/dir"}`, "invalid_parameters", []string{"recursive"}},
		{"delete the root", "delete", `{"path": "/", "recursive": true}`, "", []string{"root"}},
		{"delete missing", "delete", `{"path": "f/none"}`, "not_found", []string{"f/none"}},
		{"copy onto itself", "copy", `{"source": "f/a.txt", "destination": "f/a.txt"}`, "", []string{"inside the source"}},
		{"copy onto a file", "copy", `{"source": "f/a.txt", "destination": "f/dir/b.txt"}`, "already_exists", []string{"overwrite"}},
		{"move into itself", "move", `{"source": "f/dir", "destination": "f/dir/in"}`, "", []string{"inside"}},
		{"move without destination", "move", `{"source": "f/a.txt"}`, "invalid_parameters", []string{"destination"}},
		{"list a file", "list", `{"path": "f/a.txt"}`, "invalid_parameters", []string{"read", "info"}},
		{"list a bad pattern", "list", `{"path": "f", "pattern": "[x"}`, "invalid_parameters", []string{"pattern"}},
		{"list .snapshots", "list", `{"path": ".snapshots"}`, "invalid_parameters", []string{"guide_snapshot"}},
		{"search a bad regex", "search", `{"root_path": "f", "pattern": "(", "regex": true}`, "invalid_parameters", []string{"regex|regular expression"}},
		{"search without pattern", "search", `{"root_path": "f"}`, "invalid_parameters", []string{"pattern"}},
		{"info revision", "info", `{"path": "f/a.txt", "revision": 1}`, "invalid_parameters", []string{"revision"}},
		{"unknown argument", "info", `{"path": "f/a.txt", "follow": true}`, "invalid_parameters", []string{"follow"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := h.Revision()
			r := h.Call(c.tool, c.args)
			var e fsError
			if !r.IsError || json.Unmarshal([]byte(r.Text), &e) != nil || e.Error.Code == "" {
				t.Fatalf("%s %s: not the contract's error (isError %v): %s", c.tool, c.args, r.IsError, r.Text)
			}
			if string(r.Structured) != r.Text {
				t.Errorf("structured content %s differs from the text", r.Structured)
			}
			if c.code != "" && e.Error.Code != c.code {
				t.Errorf("%s %s: code %s, want %s: %s", c.tool, c.args, e.Error.Code, c.code, e.Error.Message)
			}
			if e.Error.Code == "internal_error" || e.Error.Details.Operation != c.tool {
				t.Errorf("%s %s: code %s, operation %q: %s", c.tool, c.args, e.Error.Code, e.Error.Details.Operation, e.Error.Message)
			}
			for _, w := range c.want {
				found := false
				for alt := range strings.SplitSeq(w, "|") {
					found = found || strings.Contains(e.Error.Message, alt)
				}
				if !found {
					t.Errorf("%s %s: %q, without %q", c.tool, c.args, e.Error.Message, w)
				}
			}
			if after := h.Revision(); after != before {
				t.Errorf("the refused call changed the depot: revision %d, then %d", before, after)
			}
		})
	}
}

// TestFSCalls: what the fs tools reply and store, over a real store.
func TestFSCalls(t *testing.T) {
	t.Parallel()
	h := newDepot(t)
	var read struct {
		Content   string `json:"content"`
		Encoding  string `json:"encoding"`
		Truncated bool   `json:"truncated"`
		LineCount int    `json:"line_count"`
		Metadata  struct {
			Path     string `json:"path"`
			Size     int64  `json:"size"`
			Revision uint64 `json:"revision"`
		} `json:"metadata"`
	}
	decode := func(tool, args string, v any) {
		t.Helper()
		r := h.Call(tool, args)
		if r.IsError || json.Unmarshal([]byte(r.Text), v) != nil {
			t.Fatalf("%s %s: %s", tool, args, r.Text)
		}
	}
	decode("read", `{"path": "f/a.txt", "start_line": 1, "end_line": 1}`, &read)
	if read.Content != "two\n" || read.LineCount != 3 || read.Metadata.Path != "f/a.txt" || read.Metadata.Size != 14 || read.Encoding != "utf8" {
		t.Errorf("read of line 1: %+v", read)
	}
	decode("read", `{"path": "/f/a.txt", "max_size": 5}`, &read)
	if read.Content != "one\nt" || !read.Truncated {
		t.Errorf("read of 5 bytes: %+v", read)
	}
	decode("read", `{"path": "f/a.txt", "encoding": "base64"}`, &read)
	if read.Content != "b25lCnR3bwp0aHJlZQo=" || read.Encoding != "base64" {
		t.Errorf("read as base64: %+v", read)
	}
	var write struct {
		Success  bool `json:"success"`
		Metadata struct {
			Path     string `json:"path"`
			Size     int64  `json:"size"`
			Revision uint64 `json:"revision"`
		} `json:"metadata"`
	}
	decode("write", `{"path": "f/w.txt", "content": "x"}`, &write)
	decode("write", `{"path": "f/w.txt", "content": "y", "mode": "append"}`, &write)
	decode("read", `{"path": "f/w.txt"}`, &read)
	if read.Content != "xy" || read.Metadata.Revision != write.Metadata.Revision {
		t.Errorf("write then append: %q at revision %d, the append's revision %d", read.Content, read.Metadata.Revision, write.Metadata.Revision)
	}
	stale := `{"path": "f/w.txt", "content": "z", "if_revision": 1}`
	if r := h.Call("write", stale); !r.IsError || !strings.Contains(r.Text, `"code":"conflict"`) {
		t.Errorf("a write with a stale if_revision: %s", r.Text)
	}
	var list struct {
		Entries []listEntry `json:"entries"`
	}
	decode("list", `{"path": "f"}`, &list)
	if names := entryNames(list.Entries); names != "a.txt dir w.txt" {
		t.Errorf("list: %s", names)
	}
	decode("list", `{"path": "/f", "include_hidden": true, "recursive": true, "pattern": "*.txt"}`, &list)
	if names := entryNames(list.Entries); names != "a.txt b.txt w.txt" || list.Entries[1].Path != "f/dir/b.txt" {
		t.Errorf("list recursive *.txt with hidden: %s %+v", names, list.Entries)
	}
	var info struct {
		Exists    bool   `json:"exists"`
		Type      string `json:"type"`
		MountPath string `json:"mount_path"`
	}
	decode("info", `{"path": "f/dir"}`, &info)
	if !info.Exists || info.Type != "directory" || info.MountPath != "/mnt/depot/f/dir" {
		t.Errorf("info of a directory: %+v", info)
	}
	decode("info", `{"path": "f/none"}`, &info)
	if info.Exists {
		t.Errorf("info of nothing: %+v", info)
	}
	var moved struct {
		Success bool `json:"success"`
	}
	decode("move", `{"source": "f/w.txt", "destination": "f/dir/w2.txt"}`, &moved)
	decode("info", `{"path": "f/w.txt"}`, &info)
	if !moved.Success || info.Exists {
		t.Errorf("move: %+v, the source still exists: %v", moved, info.Exists)
	}
}

// listEntry is an entry of a list reply.
type listEntry struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Type     string `json:"type"`
	IsHidden bool   `json:"is_hidden"`
}

// entryNames joins the names of entries with spaces.
func entryNames(entries []listEntry) string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return strings.Join(names, " ")
}
