package mcpserver_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// TestSnapshotReads: the read and list tools of the provider and fs
// profiles read a snapshot's tree, by the snapshot argument and by a path
// under /.snapshots/NAME (also under the mount), naming entries the way
// the caller did; guide_snapshot's reply says how. Refusals name the fix,
// a snapshot gives no access the live tree does not, and no read changes
// the depot.
func TestSnapshotReads(t *testing.T) {
	t.Parallel()
	h := newVersioned(t, 1, 4)
	local := h.ctx
	h.ok("guide_cache_file", m{"path": "/app/a.txt", "content": "v1"}, nil)
	h.ok("guide_cache_file", m{"path": "/app/sub/b.txt", "content": "b1"}, nil)
	created := h.ok("guide_snapshot", m{"action": "create", "name": "pre", "path": "/app"}, nil)
	for _, want := range []string{`snapshot "pre"`, "/.snapshots/pre/", "?revision="} {
		if !strings.Contains(created.Message, want) {
			t.Errorf("guide_snapshot create says %q, without how to read it (%q)", created.Message, want)
		}
	}
	h.ok("guide_cache_file", m{"path": "/app/a.txt", "content": "v2 longer"}, nil)
	h.ok("guide_cache_file", m{"path": "/app/new.txt", "content": "new"}, nil)
	before := h.revision()

	asJSON := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, c := range []struct {
		tool string
		args m
		want string // the reply's text, exactly
	}{
		{"read_file", m{"file_path": "/app/a.txt", "snapshot": "pre"}, "v1"},
		{"read_file", m{"file_path": "/.snapshots/pre/a.txt"}, "v1"},
		{"read_file", m{"file_path": testMount + "/.snapshots/pre/sub/b.txt"}, "b1"},
		{"read_file", m{"file_path": "/app/a.txt"}, "v2 longer"},
		{"read_file_binary", m{"file_path": "/app/sub/b.txt", "snapshot": "pre"}, base64.StdEncoding.EncodeToString([]byte("b1"))},
		{"list_directory", m{"directory_path": "/app", "snapshot": "pre", "recursive": true}, asJSON([]string{"/app/a.txt", "/app/sub", "/app/sub/b.txt"})},
		{"list_directory", m{"directory_path": "/.snapshots/pre", "recursive": true}, asJSON([]string{"/.snapshots/pre/a.txt", "/.snapshots/pre/sub", "/.snapshots/pre/sub/b.txt"})},
		{"list_directory", m{"directory_path": testMount + "/.snapshots/pre/sub"}, asJSON([]string{testMount + "/.snapshots/pre/sub/b.txt"})},
		{"find_files", m{"directory_path": "/.snapshots/pre", "patterns": []string{"*.txt"}}, asJSON([]string{"/.snapshots/pre/a.txt", "/.snapshots/pre/sub/b.txt"})},
		{"file_exists", m{"path": "/.snapshots/pre/sub/b.txt"}, "true"},
		{"file_exists", m{"path": "/.snapshots/pre/new.txt"}, "false"},
		{"file_exists", m{"path": "/.snapshots/nope/a.txt"}, "false"},
		{"calculate_file_hash", m{"file_path": "/.snapshots/pre/a.txt", "algorithm": "sha256"}, sum([]byte("v1"))},
	} {
		r := h.callRaw(c.tool, c.args)
		if r.isError || r.text != c.want {
			t.Errorf("%s %v: %q (isError %v), want %q", c.tool, c.args, r.text, r.isError, c.want)
		}
	}

	var stats struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
	}
	if r := h.callRaw("get_file_stats", m{"path": "/.snapshots/pre/a.txt"}); r.isError || json.Unmarshal([]byte(r.text), &stats) != nil || stats.Path != "/.snapshots/pre/a.txt" || stats.Size != 2 {
		t.Errorf("get_file_stats in the snapshot: %s", r.text)
	}

	var read struct {
		Content  string `json:"content"`
		Metadata struct {
			Path string `json:"path"`
		} `json:"metadata"`
	}
	for _, c := range []struct {
		args     m
		wantPath string
	}{
		{m{"path": "app/a.txt", "snapshot": "pre"}, "app/a.txt"},
		{m{"path": ".snapshots/pre/a.txt"}, ".snapshots/pre/a.txt"},
	} {
		if r := h.callRaw("read", c.args); r.isError || json.Unmarshal([]byte(r.text), &read) != nil || read.Content != "v1" || read.Metadata.Path != c.wantPath {
			t.Errorf("fs read %v: %s", c.args, r.text)
		}
	}
	var list struct {
		Entries []struct {
			Path string `json:"path"`
		} `json:"entries"`
	}
	if r := h.callRaw("list", m{"path": ".snapshots/pre"}); r.isError || json.Unmarshal([]byte(r.text), &list) != nil || len(list.Entries) != 2 || list.Entries[0].Path != ".snapshots/pre/a.txt" || list.Entries[1].Path != ".snapshots/pre/sub" {
		t.Errorf("fs list of the snapshot: %s", r.text)
	}
	var info struct {
		Exists bool `json:"exists"`
	}
	if r := h.callRaw("info", m{"path": "app/new.txt", "snapshot": "pre"}); r.isError || json.Unmarshal([]byte(r.text), &info) != nil || info.Exists {
		t.Errorf("fs info of a file written after the snapshot, in the snapshot: %s", r.text)
	}

	// Refusals: each names what to send instead.
	for _, c := range []struct {
		tool string
		args m
		want []string
	}{
		{"read_file", m{"file_path": "/app/a.txt", "snapshot": "nope"}, []string{"no snapshot named", "guide_snapshot"}},
		{"read_file", m{"file_path": "/.snapshots/nope/a.txt"}, []string{"no snapshot named", "guide_snapshot"}},
		{"read_file", m{"file_path": "/other/x.txt", "snapshot": "pre"}, []string{"not in snapshot pre", "/app"}},
		{"read_file", m{"file_path": "/.snapshots/pre/a.txt", "snapshot": "pre"}, []string{"either"}},
		{"read_file", m{"file_path": "/app/new.txt", "snapshot": "pre"}, []string{"not found"}},
		{"list_directory", m{"directory_path": "/.snapshots"}, []string{"guide_snapshot", "/.snapshots/NAME"}},
		{"read_file", m{"file_path": "/app/a.txt", "snapshot": "a/b"}, []string{"not a snapshot name"}},
		{"read", m{"path": "app/a.txt", "snapshot": "pre", "revision": 1}, []string{"either revision or a snapshot"}},
		{"read", m{"path": "app/new.txt", "snapshot": "pre"}, []string{"did not exist in snapshot pre", "list"}},
		{"get_file_stats", m{"path": "/.snapshots/nope"}, []string{"guide_snapshot"}},
	} {
		r := h.callRaw(c.tool, c.args)
		if !r.isError {
			t.Errorf("%s %v succeeded: %s", c.tool, c.args, r.text)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(r.text, w) {
				t.Errorf("%s %v: %s, without %q", c.tool, c.args, r.text, w)
			}
		}
		if strings.Contains(r.text, "internal_error") || strings.Contains(r.text, "Unexpected error") {
			t.Errorf("%s %v: an internal error: %s", c.tool, c.args, r.text)
		}
	}

	// Grants: the snapshot of /app is unknown to an identity that may not
	// read /app (as one never made), and read by one that may.
	h.as(agent(t, "b", "provider:/b:r"))
	if r := h.callRaw("read_file", m{"file_path": "/.snapshots/pre/a.txt"}); !r.isError || !strings.Contains(r.text, "no snapshot named") {
		t.Errorf("another tenant read the snapshot of /app: %s", r.text)
	}
	h.as(agent(t, "app", "provider:/app:r"))
	if r := h.callRaw("read_file", m{"file_path": "/.snapshots/pre/a.txt"}); r.isError || r.text != "v1" {
		t.Errorf("an identity granted /app could not read the snapshot of /app: %s", r.text)
	}
	h.ctx = local
	if got := h.revision(); got != before {
		t.Errorf("reads moved the depot from revision %d to %d", before, got)
	}
}
