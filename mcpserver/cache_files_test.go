package mcpserver_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver"
)

// batchReply is guide_cache_files' reply data.
type batchReply struct {
	Files  []fileReply `json:"files"`
	Totals struct {
		Files, Created, Updated, Unchanged int
		Bytes                              int64
	} `json:"totals"`
	Revision uint64 `json:"revision"`
}

func TestCacheFilesStores(t *testing.T) {
	h := newHarness(t, nil)
	h.ok("guide_cache_file", m{"path": "/batch/old.txt", "content": "old"}, nil)
	var files []any
	for i := range 50 {
		files = append(files, m{"path": fmt.Sprintf("/batch/d%d/f%d.txt", i%4, i), "content": fmt.Sprintf("file %d\n", i)})
	}
	bin := []byte{0, 1, 2, 255}
	files = append(files,
		m{"path": "/batch/old.txt", "content": "new"},
		m{"filename": "upload.bin", "content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64", "sha256": sum(bin), "pin": true},
	)
	var d batchReply
	env := h.ok("guide_cache_files", m{"files": files}, &d)
	if len(d.Files) != 52 || d.Totals.Files != 52 || d.Totals.Created != 51 || d.Totals.Updated != 1 {
		t.Fatalf("reply %d files, totals %+v", len(d.Files), d.Totals)
	}
	for i := range 50 {
		f, want := d.Files[i], fmt.Sprintf("file %d\n", i)
		if f.Status != "created" || f.Path != fmt.Sprintf("/batch/d%d/f%d.txt", i%4, i) || f.SHA256 != sum([]byte(want)) ||
			f.MountPath != testMount+f.Path || string(h.read(f.Path)) != want {
			t.Errorf("files[%d] = %+v", i, f)
		}
	}
	if f := d.Files[51]; !strings.HasPrefix(f.Path, "/uploads/"+sum(bin)[:16]) || !f.Pinned || string(h.read(f.Path)) != string(bin) {
		t.Errorf("the filename-only upload: %+v", f)
	}
	if d.Revision != h.revision() || !slices.Contains(h.appliedRevisions(), d.Revision) {
		t.Errorf("reply revision %d, store %d, applied %v", d.Revision, h.revision(), h.appliedRevisions())
	}
	if env.Stats["files"] != float64(52) {
		t.Errorf("stats %v", env.Stats)
	}
	// Repeating the call changes nothing.
	h.ok("guide_cache_files", m{"files": files}, &d)
	if d.Totals.Unchanged != 52 {
		t.Errorf("repeated call: totals %+v, want 52 unchanged", d.Totals)
	}
}

// TestCacheFilesAllOrNothing sends batches with one bad entry: each is
// refused naming the entry, and the depot does not change.
func TestCacheFilesAllOrNothing(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, MaxBatchFiles: 10, MaxBatchBytes: 100, MaxFileBytes: 50}})
	h.ok("guide_cache_file", m{"path": "/keep/file", "content": "kept"}, nil)
	good := func(i int) m { return m{"path": fmt.Sprintf("/new/f%d", i), "content": "x"} }
	tests := []struct {
		name    string
		bad     m
		extra   int // more good entries
		errType string
		want    string
	}{
		{"hash mismatch", m{"path": "/new/bad", "content": "b", "sha256": strings.Repeat("0", 64)}, 0, "validation", "files[2].sha256"},
		{"unknown argument", m{"path": "/new/bad", "content": "b", "colour": "red"}, 0, "validation", "files[2]: unknown argument"},
		{"escape", m{"path": "../../etc/passwd", "content": "b"}, 0, "security", "escapes"},
		{"under a file", m{"path": "/keep/file/below", "content": "b"}, 0, "conflict", "files[2]"},
		{"over a directory", m{"path": "/keep", "content": "b"}, 0, "conflict", "files[2]"},
		{"same path twice", good(0), 0, "validation", "files[2]: stores /new/f0, as files[0] already does"},
		{"file over the file limit", m{"path": "/new/big", "content": strings.Repeat("b", 51)}, 0, "limit", "file size limit"},
		{"too many files", good(9), 8, "limit", "11 files exceed the limit of 10"},
		{"too many bytes", m{"path": "/new/big", "content": strings.Repeat("b", 49)}, 3, "limit", "exceed the limit of 100 per call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := []any{good(0), good(1), tt.bad}
			for i := range tt.extra {
				files = append(files, m{"path": fmt.Sprintf("/new/g%d", i), "content": strings.Repeat("g", 20)})
			}
			rev := h.revision()
			env := h.fail("guide_cache_files", m{"files": files}, tt.errType)
			if !strings.Contains(env.Error.Message, tt.want) {
				t.Errorf("message %q lacks %q", env.Error.Message, tt.want)
			}
			if got := h.revision(); got != rev {
				t.Errorf("a refused batch moved the revision from %d to %d", rev, got)
			}
			if _, ok := h.stat("/new/f0"); ok {
				t.Errorf("a refused batch stored its first entry")
			}
		})
	}
}

// TestCacheFilesGrants checks every entry's path against the caller's
// grants: one path outside them refuses the call, and the one audit record
// lists the paths.
func TestCacheFilesGrants(t *testing.T) {
	e := newEnforced(t, nil, nil, nil)
	e.as(agent(t, "a", "guide:/projects/a:rw"))
	files := []any{m{"path": "/projects/a/one", "content": "1"}, m{"path": "/projects/abc/two", "content": "2"}}
	before, rev := len(e.rec.records()), e.revision()
	env := e.fail("guide_cache_files", m{"files": files}, "security")
	if !strings.Contains(env.Error.Message, "/projects/abc/two") {
		t.Errorf("message %q does not name the refused path", env.Error.Message)
	}
	if e.revision() != rev {
		t.Errorf("a denied batch changed the store")
	}
	recs := e.rec.since(before)
	if len(recs) != 1 || !slices.Contains(recs[0].Paths, "/projects/a/one") || !slices.Contains(recs[0].Paths, "/projects/abc/two") {
		t.Fatalf("audit records %+v, want one listing both paths", recs)
	}
	e.ok("guide_cache_files", m{"files": files[:1]}, nil)
}
