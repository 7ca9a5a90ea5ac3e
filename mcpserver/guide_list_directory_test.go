package mcpserver_test

import (
	"slices"
	"strings"
	"testing"
)

func TestListDirectory(t *testing.T) {
	h := newHarness(t, nil)
	var d listReply
	env := h.ok("guide_list_directory", map[string]any{
		"path":    "/workspace/app",
		"pattern": "*.go",
		"entries": []any{
			map[string]any{"name": "main.go", "type": "file", "size": 1834, "mtime": "2024-05-01T12:00:00Z"},
			map[string]any{"name": "README.md", "type": "file", "size": 90},
			map[string]any{"name": "internal", "type": "directory", "entries": []any{
				map[string]any{"name": "util.go", "type": "file", "size": 512, "mtime": 1714564800, "mode": "0640"},
				map[string]any{"name": "deep/er/x.go", "type": "file"},
			}},
			map[string]any{"name": "empty", "type": "directory"},
		},
	}, &d)
	if d.Path != "/workspace/app" || d.MountPath != testMount+"/workspace/app" {
		t.Errorf("path %q mount_path %q", d.Path, d.MountPath)
	}
	if d.Declared != 6 || d.Files != 3 || d.Directories != 3 || d.Created != 6 || d.Refused != 1 {
		t.Errorf("counts %+v", d)
	}
	if !slices.Equal(d.RefusedPaths, []string{"/workspace/app/README.md"}) {
		t.Errorf("refused_paths %q", d.RefusedPaths)
	}
	if len(env.Warnings) == 0 || !strings.Contains(strings.Join(env.Warnings, " "), "pattern") {
		t.Errorf("warnings %q, want one about the refused file", env.Warnings)
	}
	if _, ok := h.stat("/workspace/app/README.md"); ok {
		t.Error("a refused file was recorded")
	}
	e, ok := h.stat("/workspace/app/internal/util.go")
	if !ok || e.Present || e.Size != 512 || e.MTime.Unix() != 1714564800 || e.Mode.Perm() != 0o640 {
		t.Errorf("placeholder %+v", e)
	}
	if e, ok := h.stat("/workspace/app/empty"); !ok || !e.IsDir() {
		t.Errorf("empty directory %+v", e)
	}
	if _, ok := h.stat("/workspace/app/internal/deep/er/x.go"); !ok {
		t.Error("an entry named by a relative path was not recorded")
	}
	if applied := h.appliedRevisions(); len(applied) != 1 || applied[0] != d.Revision || d.Revision != h.revision() {
		t.Errorf("Applied %v, reply revision %d, store revision %d", applied, d.Revision, h.revision())
	}

	// The content arrives; a later listing with another size makes it stale.
	h.ok("guide_cache_file", map[string]any{"path": "/workspace/app/main.go", "content": "package main\n", "mtime": "2024-05-01T12:00:00Z"}, nil)
	h.ok("guide_list_directory", map[string]any{"path": "/workspace/app", "entries": []any{
		map[string]any{"name": "main.go", "type": "file", "size": 99999},
		map[string]any{"name": "internal", "type": "directory"},
	}}, &d)
	if d.Stale != 1 || d.Created != 0 {
		t.Errorf("second listing: %+v, want 1 stale", d)
	}
	if e, _ := h.stat("/workspace/app/main.go"); e.Present {
		t.Error("a stale file still has its old content")
	}
}

func TestListDirectoryRoot(t *testing.T) {
	h := newHarness(t, nil)
	var d listReply
	h.ok("guide_list_directory", map[string]any{"path": "/", "entries": []any{}}, &d)
	if d.Declared != 0 || d.Path != "/" {
		t.Errorf("empty root listing: %+v", d)
	}
	h.ok("guide_list_directory", map[string]any{"path": "/", "entries": []any{map[string]any{"name": "a", "type": "file"}}}, &d)
	if d.Declared != 1 || d.Created != 1 {
		t.Errorf("root listing: %+v", d)
	}
}
