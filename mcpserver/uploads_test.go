package mcpserver_test

import (
	"slices"
	"strings"
	"testing"
)

// TestUploadsTools: guide_list_uploads shows only the uploads of files the
// caller may read; guide_drop_uploads needs write access to each upload's
// file: naming one it may not write denies the whole call, and a drop by
// idle time leaves such uploads out. A read-only caller is not shown the
// drop tool at all.
func TestUploadsTools(t *testing.T) {
	e := newEnforced(t, nil, nil, nil)
	e.as(tester)
	for _, u := range []struct{ path, id string }{{"/a/f", "ua"}, {"/b/g", "ub"}} {
		e.ok("guide_read_file", m{"path": u.path, "upload_id": u.id, "chunk_index": 0, "chunk_count": 2, "content": "x", "sha256": strings.Repeat("a", 64)}, nil)
	}
	type list struct {
		Uploads []struct {
			UploadID string `json:"upload_id"`
		} `json:"uploads"`
	}
	ids := func(l list) []string {
		var out []string
		for _, u := range l.Uploads {
			out = append(out, u.UploadID)
		}
		return out
	}
	var l list
	e.ok("guide_list_uploads", m{}, &l)
	if got := ids(l); !slices.Equal(got, []string{"ua", "ub"}) {
		t.Fatalf("full caller lists %v", got)
	}

	e.as(agent(t, "ra", "guide:/a:r"))
	e.ok("guide_list_uploads", m{}, &l)
	if got := ids(l); !slices.Equal(got, []string{"ua"}) {
		t.Errorf("a caller that may read /a lists %v, want [ua]", got)
	}
	if _, err := e.rawCall("guide_drop_uploads", m{"idle_seconds": 0}); err == nil {
		t.Error("a read-only caller could call guide_drop_uploads")
	}

	e.as(agent(t, "wa", "guide:/a:rw"))
	e.fail("guide_drop_uploads", m{"upload_ids": []any{"ua", "ub"}}, "security")
	var d struct {
		Dropped []struct {
			UploadID string `json:"upload_id"`
		} `json:"dropped"`
	}
	e.ok("guide_drop_uploads", m{"idle_seconds": 0}, &d)
	if len(d.Dropped) != 1 || d.Dropped[0].UploadID != "ua" {
		t.Errorf("a caller that may write /a dropped %+v, want only ua", d.Dropped)
	}
	e.fail("guide_drop_uploads", m{}, "validation")

	e.as(tester)
	e.ok("guide_list_uploads", m{}, &l)
	if got := ids(l); !slices.Equal(got, []string{"ub"}) {
		t.Errorf("after the drops the full caller lists %v, want [ub]", got)
	}
}
