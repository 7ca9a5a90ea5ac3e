package guide_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver/internal/guide"
	"github.com/depotfs/depotfs/mcpserver/internal/pending"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/mcpserver/internal/tool/tooltest"
	"github.com/depotfs/depotfs/store/bolt"
)

// newDepot serves the guide tools over a bolt store in a temporary
// directory that keeps 3 versions a path.
func newDepot(t *testing.T) *tooltest.Harness {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), &bolt.Options{KeepVersions: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return tooltest.New(t, st, nil, func(env *tool.Env, rt *tool.Runtime) []tool.Tool {
		return guide.Tools(env, pending.New(nil, t.Context(), env.MountPath), guide.NewUploads(rt))
	})
}

// envelope is a guide reply.
type envelope struct {
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Message string          `json:"message"`
	Warning []string        `json:"warnings"`
	Error   *struct {
		Type        string `json:"type"`
		Message     string `json:"message"`
		Instruction string `json:"instruction"`
	} `json:"error"`
}

// call calls a guide tool and decodes its envelope, which is both the
// text and the structured content.
func call(t *testing.T, h *tooltest.Harness, name, args string) envelope {
	t.Helper()
	r := h.Call(name, args)
	var env envelope
	if err := json.Unmarshal([]byte(r.Text), &env); err != nil {
		t.Fatalf("%s %s: the reply is not an envelope: %v: %s", name, args, err, r.Text)
	}
	if string(r.Structured) != r.Text {
		t.Errorf("%s: structured content %s differs from the text %s", name, r.Structured, r.Text)
	}
	if env.Success == r.IsError || env.Success != (env.Error == nil) {
		t.Errorf("%s %s: success %v, isError %v, error %v", name, args, env.Success, r.IsError, env.Error)
	}
	return env
}

// TestGuideRefusals: the argument rules of the guide tools, each refusal
// with its type and the words that name the fix, over a real store; a
// refused call changes nothing.
func TestGuideRefusals(t *testing.T) {
	t.Parallel()
	h := newDepot(t)
	h.Put("/g/a.txt", "alpha")
	h.Put("/g/dir/b.txt", "beta")
	call(t, h, "guide_snapshot", `{"action": "create", "name": "s1", "path": "/g"}`)
	hex64 := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name, tool, args, typ string
		want                  []string // in the message or the instruction
	}{
		{"cache_file without path", "guide_cache_file", `{"content": "x"}`, "validation", []string{"path", "filename"}},
		{"cache_file path and filename", "guide_cache_file", `{"path": "/g/x", "filename": "x", "content": "x"}`, "validation", []string{"not both"}},
		{"cache_file at the root", "guide_cache_file", `{"path": "/", "content": "x"}`, "validation", []string{"root", "/notes/todo.txt"}},
		{"cache_file sha256 with its prefix", "guide_cache_file", `{"path": "/g/x", "content": "x", "sha256": "sha256:` + hex64 + `"}`, "validation", []string{`without the "sha256:" prefix`}},
		{"cache_file sha256 short", "guide_cache_file", `{"path": "/g/x", "content": "x", "sha256": "` + hex64[:10] + `"}`, "validation", []string{"64 hexadecimal digits"}},
		{"cache_file sha256 of other content", "guide_cache_file", `{"path": "/g/x", "content": "x", "sha256": "` + hex64 + `"}`, "validation", []string{"hashes to"}},
		{"cache_file mode as a number", "guide_cache_file", `{"path": "/g/x", "content": "x", "mode": 644}`, "validation", []string{`"0644"`}},
		{"cache_file mtime in milliseconds", "guide_cache_file", `{"path": "/g/x", "content": "x", "mtime": 1714564800000}`, "validation", []string{"1714564800"}},
		{"cache_file ttl 0", "guide_cache_file", `{"path": "/g/x", "content": "x", "ttl_seconds": 0}`, "validation", []string{"minimum 1"}},
		{"cache_file encoding binary", "guide_cache_file", `{"path": "/g/x", "content": "x", "encoding": "binary"}`, "validation", []string{`"base64"`}},
		{"cache_file bad base64", "guide_cache_file", `{"path": "/g/x", "content": "!!", "encoding": "base64"}`, "validation", []string{"base64"}},
		{"cache_file unknown argument", "guide_cache_file", `{"path": "/g/x", "content": "x", "overwrite": true}`, "validation", []string{"overwrite"}},
		{"cache_file duplicate key", "guide_cache_file", `{"path": "/g/x", "path": "/g/y", "content": "x"}`, "validation", []string{"path"}},
		{"cache_file climbing out", "guide_cache_file", `{"path": "../../etc/passwd", "content": "x"}`, "security", []string{"inside the depot"}},
		{"cache_file over a directory", "guide_cache_file", `{"path": "/g/dir", "content": "x"}`, "", []string{"choose a path"}},
		{"cache_file if_absent on a file", "guide_cache_file", `{"path": "/g/a.txt", "content": "x", "if_absent": true}`, "conflict", []string{"if_revision"}},
		{"cache_file under .snapshots", "guide_cache_file", `{"path": "/.snapshots/s1/x", "content": "x"}`, "validation", []string{".snapshots"}},
		{"cache_files empty", "guide_cache_files", `{"files": []}`, "validation", []string{"files"}},
		{"cache_files one path twice", "guide_cache_files", `{"files": [{"path": "/g/d", "content": "1"}, {"path": "/g/d", "content": "2"}]}`, "validation", []string{"/g/d"}},
		{"list_directory symlink", "guide_list_directory", `{"path": "/g/l", "entries": [{"name": "x", "type": "symlink"}]}`, "validation", []string{"file", "directory"}},
		{"list_directory over a file", "guide_list_directory", `{"path": "/g/a.txt", "entries": [{"name": "x", "type": "file"}]}`, "", []string{"choose a path"}},
		{"read_file chunk beyond its count", "guide_read_file", `{"path": "/g/c", "upload_id": "u1", "chunk_index": 2, "chunk_count": 2, "content": "eA==", "encoding": "base64"}`, "validation", []string{"chunk_index", "0..1"}},
		{"read_file chunk without the file's sha256", "guide_read_file", `{"path": "/g/c", "upload_id": "u1", "chunk_index": 0, "chunk_count": 2, "content": "eA==", "encoding": "base64"}`, "validation", []string{"sha256", "whole file"}},
		{"snapshot without action", "guide_snapshot", `{"name": "s2"}`, "validation", []string{"create, list or delete"}},
		{"snapshot unknown action", "guide_snapshot", `{"action": "take", "name": "s2"}`, "validation", []string{"create"}},
		{"snapshot name with a slash", "guide_snapshot", `{"action": "create", "name": "a/b"}`, "validation", []string{"A-Z a-z 0-9"}},
		{"snapshot taken name", "guide_snapshot", `{"action": "create", "name": "s1"}`, "conflict", []string{"another name", "delete"}},
		{"snapshot delete unknown", "guide_snapshot", `{"action": "delete", "name": "nosuch"}`, "not_found", []string{"action list"}},
		{"snapshot ttl on list", "guide_snapshot", `{"action": "list", "ttl_seconds": 60}`, "validation", []string{"action create"}},
		{"file_history of a directory", "guide_file_history", `{"path": "/g/dir"}`, "", []string{"is a directory", "file"}},
		{"restore neither revision nor snapshot", "guide_restore", `{"path": "/g/a.txt"}`, "validation", []string{"exactly one"}},
		{"restore both", "guide_restore", `{"path": "/g/a.txt", "revision": 1, "snapshot": "s1"}`, "validation", []string{"exactly one"}},
		{"restore unknown snapshot", "guide_restore", `{"path": "/g/a.txt", "snapshot": "nosuch"}`, "not_found", []string{"action list"}},
		{"restore outside the snapshot", "guide_restore", `{"path": "/elsewhere", "snapshot": "s1"}`, "validation", []string{"/g"}},
		{"restore a directory", "guide_restore", `{"path": "/g/dir", "snapshot": "s1"}`, "", []string{"only files", "once for each file"}},
		{"restore a future revision", "guide_restore", `{"path": "/g/a.txt", "revision": 999999}`, "", []string{"kept:"}},
		{"drop_uploads without arguments", "guide_drop_uploads", `{}`, "validation", []string{"upload_ids", "idle_seconds"}},
		{"pending_requests with a path", "guide_pending_requests", `{"path": "/g"}`, "validation", []string{"path"}},
		{"begin_upload negative size", "guide_begin_upload", `{"path": "/g/big", "size": -1}`, "validation", []string{"size"}},
		{"changes since as a word", "guide_changes", `{"since": "latest"}`, "validation", []string{"since"}},
		{"cache_stats with an argument", "guide_cache_stats", `{"verbose": true}`, "validation", []string{"verbose"}},
		{"arguments as an array", "guide_cache_stats", `[]`, "validation", []string{"object"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := h.Revision()
			env := call(t, h, c.tool, c.args)
			if env.Success {
				t.Fatalf("%s %s succeeded: %s", c.tool, c.args, env.Message)
			}
			if c.typ != "" && env.Error.Type != c.typ {
				t.Errorf("%s %s: error type %s, want %s: %s", c.tool, c.args, env.Error.Type, c.typ, env.Error.Message)
			}
			if env.Error.Type == "system" {
				t.Errorf("%s %s: an internal error: %s", c.tool, c.args, env.Error.Message)
			}
			text := env.Error.Message + "\n" + env.Error.Instruction
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("%s %s: %q, without %q", c.tool, c.args, text, w)
				}
			}
			if after := h.Revision(); after != before {
				t.Errorf("the refused call changed the depot: revision %d, then %d", before, after)
			}
		})
	}
}

// TestGuideWrites: what the guide tools store and reply, over a real
// store: a file with its metadata, a mount path taken as the depot path
// with a warning, a repeat answered unchanged, history and a restore.
func TestGuideWrites(t *testing.T) {
	t.Parallel()
	h := newDepot(t)
	var file struct {
		Status    string `json:"status"`
		Path      string `json:"path"`
		MountPath string `json:"mount_path"`
		Size      int64  `json:"size"`
		Revision  uint64 `json:"revision"`
		Mode      string `json:"mode"`
	}
	env := call(t, h, "guide_cache_file", `{"path": "/mnt/depot/w/a.sh", "content": "echo hi\n", "mode": "0755"}`)
	if err := json.Unmarshal(env.Data, &file); err != nil || !env.Success || file.Path != "/w/a.sh" || file.MountPath != "/mnt/depot/w/a.sh" || file.Size != 8 || file.Mode != "0755" || file.Status != "created" {
		t.Fatalf("cache_file at a mount path: %+v %v: %s", file, err, env.Data)
	}
	if len(env.Warning) == 0 || !strings.Contains(env.Warning[0], `"/w/a.sh"`) {
		t.Errorf("a mount path taken as the depot path without a warning naming it: %v", env.Warning)
	}
	first := file.Revision
	env = call(t, h, "guide_cache_file", `{"path": "/w/a.sh", "content": "echo hi\n", "mode": "0755"}`)
	if json.Unmarshal(env.Data, &file) != nil || file.Status != "unchanged" || h.Revision() != first {
		t.Errorf("the same file again: status %s, revision %d then %d", file.Status, first, h.Revision())
	}
	call(t, h, "guide_cache_file", `{"path": "/w/a.sh", "content": "echo bye\n"}`)
	var history struct {
		Versions []struct {
			Revision uint64 `json:"revision"`
			Live     bool   `json:"live"`
		} `json:"versions"`
	}
	env = call(t, h, "guide_file_history", `{"path": "/w/a.sh"}`)
	if json.Unmarshal(env.Data, &history) != nil || len(history.Versions) != 2 || !history.Versions[0].Live || history.Versions[1].Revision != first {
		t.Fatalf("file_history: %s", env.Data)
	}
	env = call(t, h, "guide_restore", `{"path": "/w/a.sh", "revision": `+jsonNumber(first)+`}`)
	if !env.Success {
		t.Fatalf("restore: %+v", env.Error)
	}
	after := h.Revision()
	env = call(t, h, "guide_restore", `{"path": "/w/a.sh", "revision": `+jsonNumber(first)+`}`)
	if !env.Success || !strings.Contains(env.Message+string(env.Data), "unchanged") || h.Revision() != after {
		t.Errorf("restoring the live version again: %s %s, revision %d then %d", env.Message, env.Data, after, h.Revision())
	}
}

func jsonNumber(n uint64) string { b, _ := json.Marshal(n); return string(b) }
