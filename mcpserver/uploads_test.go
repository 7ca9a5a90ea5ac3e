package mcpserver_test

import (
	"slices"
	"strings"
	"testing"
)

// TestUploadsTools: upload ids are per identity. guide_list_uploads shows
// a caller its own uploads (a caller with full grants, the operator,
// everyone's); another identity may choose the same id without meeting
// the first; naming another identity's id in guide_drop_uploads finds
// nothing, as a made-up id does; a drop by idle time drops only the
// caller's own. A read-only caller is not shown the drop tool at all.
func TestUploadsTools(t *testing.T) {
	e := newEnforced(t, nil, nil, nil)
	e.as(tester)
	chunk := func(path, id string) {
		e.ok("guide_read_file", m{"path": path, "upload_id": id, "chunk_index": 0, "chunk_count": 2, "content": "x", "sha256": strings.Repeat("a", 64)}, nil)
	}
	for _, u := range []struct{ path, id string }{{"/a/f", "ua"}, {"/b/g", "ub"}} {
		chunk(u.path, u.id)
	}
	type list struct {
		Uploads []struct {
			UploadID string `json:"upload_id"`
			Path     string `json:"path"`
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
	if got := ids(l); len(got) != 0 {
		t.Errorf("another identity that may read /a lists %v, want none", got)
	}
	if _, err := e.rawCall("guide_drop_uploads", m{"idle_seconds": 0}); err == nil {
		t.Error("a read-only caller could call guide_drop_uploads")
	}

	e.as(agent(t, "wa", "guide:/a:rw"))
	chunk("/a/h", "ua") // the id tester chose: its own upload, no conflict
	e.ok("guide_list_uploads", m{}, &l)
	if got := ids(l); !slices.Equal(got, []string{"ua"}) || l.Uploads[0].Path != "/a/h" {
		t.Errorf("wa lists %+v, want only its own ua at /a/h", l.Uploads)
	}
	var d struct {
		Dropped []struct {
			UploadID string `json:"upload_id"`
			Path     string `json:"path"`
		} `json:"dropped"`
		Kept []struct {
			UploadID string `json:"upload_id"`
			Reason   string `json:"reason"`
		} `json:"kept"`
	}
	e.ok("guide_drop_uploads", m{"upload_ids": []any{"ub"}}, &d)
	if len(d.Dropped) != 0 || len(d.Kept) != 1 || d.Kept[0].Reason != "not_found" {
		t.Errorf("wa naming tester's ub: %+v; want it not found, as a made-up id", d)
	}
	e.ok("guide_drop_uploads", m{"idle_seconds": 0}, &d)
	if len(d.Dropped) != 1 || d.Dropped[0].UploadID != "ua" || d.Dropped[0].Path != "/a/h" {
		t.Errorf("wa dropped %+v, want only its own ua", d.Dropped)
	}
	e.fail("guide_drop_uploads", m{}, "validation")

	e.as(tester)
	e.ok("guide_list_uploads", m{}, &l)
	if got := ids(l); !slices.Equal(got, []string{"ua", "ub"}) {
		t.Errorf("after wa's drops the full caller lists %v, want [ua ub]", got)
	}
}
