package mcpserver_test

import (
	"context"
	"encoding/base64"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver"
)

func TestCacheFileText(t *testing.T) {
	h := newHarness(t, nil)
	h.ctx = identity.NewContext(context.Background(), identity.Identity{Transport: "test", Subject: "alice", Full: true})
	content := "héllo, depot\n"
	var d fileReply
	env := h.ok("guide_cache_file", map[string]any{"path": `notes\\todo.txt`, "content": content}, &d)

	if d.Status != "created" || d.Path != "/notes/todo.txt" || d.Key != d.Path {
		t.Errorf("status %q path %q key %q, want created /notes/todo.txt", d.Status, d.Path, d.Key)
	}
	if d.MountPath != testMount+"/notes/todo.txt" {
		t.Errorf("mount_path %q", d.MountPath)
	}
	if d.Size != int64(len(content)) || d.SHA256 != sum([]byte(content)) || d.Updates != 0 || d.Encoding != "utf-8" {
		t.Errorf("size %d sha256 %s updates %d encoding %s", d.Size, d.SHA256, d.Updates, d.Encoding)
	}
	if got := string(h.read("/notes/todo.txt")); got != content {
		t.Errorf("stored %q, want %q", got, content)
	}
	e, _ := h.stat("/notes/todo.txt")
	if e.Writer != "test:alice" || e.Revision != d.Revision || e.Source != "guide_cache_file" {
		t.Errorf("entry writer %q revision %d source %q; reply revision %d", e.Writer, e.Revision, e.Source, d.Revision)
	}
	if applied := h.appliedRevisions(); len(applied) != 1 || applied[0] != d.Revision {
		t.Errorf("Applied called with %v, want [%d]", applied, d.Revision)
	}
	if len(env.Warnings) != 0 {
		t.Errorf("warnings %q", env.Warnings)
	}
	if env.Stats["bytes_received"] != float64(len(content)) || env.Stats["cache_status"] != "created" {
		t.Errorf("stats %v", env.Stats)
	}
}

func TestCacheFileBinary(t *testing.T) {
	h := newHarness(t, nil)
	data := make([]byte, 256)
	for i := range data {
		data[i] = byte(i)
	}
	var d fileReply
	h.ok("guide_cache_file", map[string]any{
		"path":     "/bin/all-bytes",
		"content":  base64.StdEncoding.EncodeToString(data),
		"encoding": "base64",
		"sha256":   strings.ToUpper(sum(data)),
	}, &d)
	if d.SHA256 != sum(data) || d.Size != 256 || d.Encoding != "base64" {
		t.Errorf("reply sha256 %s size %d encoding %s", d.SHA256, d.Size, d.Encoding)
	}
	if got := h.read("/bin/all-bytes"); string(got) != string(data) {
		t.Errorf("stored bytes differ from all 256 byte values")
	}
}

func TestCacheFileBase64Forms(t *testing.T) {
	h := newHarness(t, nil)
	data := []byte("any carnal pleasure.")
	padded := base64.StdEncoding.EncodeToString(data)
	for name, content := range map[string]string{
		"padded":      padded,
		"unpadded":    base64.RawStdEncoding.EncodeToString(data),
		"line breaks": padded[:8] + "\r\n" + padded[8:16] + "\n" + padded[16:],
	} {
		t.Run(name, func(t *testing.T) {
			var d fileReply
			h.ok("guide_cache_file", map[string]any{"path": "/b64/" + strings.ReplaceAll(name, " ", "-"), "content": content, "encoding": "base64"}, &d)
			if d.SHA256 != sum(data) {
				t.Errorf("decoded to sha256 %s, want %s", d.SHA256, sum(data))
			}
		})
	}
}

func TestCacheFileFilenameOnly(t *testing.T) {
	h := newHarness(t, nil)
	content := []byte("%PDF-1.4 pretend\n")
	var d fileReply
	h.ok("guide_cache_file", map[string]any{
		"filename": `C:\Users\me\Downloads\report.pdf`,
		"content":  base64.StdEncoding.EncodeToString(content),
		"encoding": "base64",
	}, &d)
	want := "/uploads/" + sum(content)[:16] + "/report.pdf"
	if d.Path != want || d.Key != want || d.MountPath != testMount+want || d.Filename != "report.pdf" {
		t.Errorf("path %q key %q mount_path %q filename %q, want %s", d.Path, d.Key, d.MountPath, d.Filename, want)
	}
	if string(h.read(want)) != string(content) {
		t.Errorf("content not stored at %s", want)
	}

	// Directory parts, even climbing ones, are stripped, not refused.
	h.ok("guide_cache_file", map[string]any{"filename": "../../etc/passwd", "content": "x"}, &d)
	if want := "/uploads/" + sum([]byte("x"))[:16] + "/passwd"; d.Path != want {
		t.Errorf("path %q, want %q", d.Path, want)
	}
}

func TestCacheFileUploadsDir(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{UploadsDir: "inbox//shared/", Settings: mcpserver.Settings{MountPoint: testMount}})
	var d fileReply
	h.ok("guide_cache_file", map[string]any{"filename": "a.txt", "content": "a"}, &d)
	if want := "/inbox/shared/" + sum([]byte("a"))[:16] + "/a.txt"; d.Path != want {
		t.Errorf("path %q, want %q", d.Path, want)
	}
}

func TestCacheFileStatuses(t *testing.T) {
	h := newHarness(t, nil)
	steps := []struct {
		content string
		status  string
		updates uint64
	}{
		{"one", "created", 0},
		{"one", "unchanged", 0},
		{"two", "updated", 1},
		{"two", "unchanged", 1},
		{"three", "updated", 2},
	}
	for i, s := range steps {
		var d fileReply
		h.ok("guide_cache_file", map[string]any{"path": "/counter.txt", "content": s.content}, &d)
		if d.Status != s.status || d.Updates != s.updates {
			t.Errorf("step %d: status %q updates %d, want %q %d", i, d.Status, d.Updates, s.status, s.updates)
		}
		if got := string(h.read("/counter.txt")); got != s.content {
			t.Errorf("step %d: stored %q, want %q", i, got, s.content)
		}
	}
}

func TestCacheFileMetadata(t *testing.T) {
	h := newHarness(t, nil)
	tests := []struct {
		mtime any
		want  time.Time
		mode  string
		perm  fs.FileMode
	}{
		{"2024-05-01T12:00:00Z", time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), "0644", 0o644},
		{"2024-05-01T14:00:00.25+02:00", time.Date(2024, 5, 1, 12, 0, 0, 250e6, time.UTC), "755", 0o755},
		{1714564800, time.Unix(1714564800, 0), "0o600", 0o600},
		{1714564800.5, time.Unix(1714564800, 500e6), "0444", 0o444},
	}
	for i, tt := range tests {
		p := "/meta/" + string(rune('a'+i))
		var d fileReply
		h.ok("guide_cache_file", map[string]any{"path": p, "content": "x", "mtime": tt.mtime, "mode": tt.mode}, &d)
		e, _ := h.stat(p)
		if !e.MTime.Equal(tt.want) || e.Mode.Perm() != tt.perm {
			t.Errorf("%v %q: stored mtime %v mode %v, want %v %v", tt.mtime, tt.mode, e.MTime, e.Mode, tt.want, tt.perm)
		}
		if d.MTime != tt.want.UTC().Format(time.RFC3339Nano) || d.Mode != "0"+octal(tt.perm) {
			t.Errorf("reply mtime %q mode %q", d.MTime, d.Mode)
		}
	}
}

func octal(m fs.FileMode) string {
	const digits = "01234567"
	p := uint32(m.Perm())
	return string([]byte{digits[p>>6&7], digits[p>>3&7], digits[p&7]})
}

func TestCacheFileNotMounted(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{})
	var d fileReply
	env := h.ok("guide_cache_file", map[string]any{"path": "/x", "content": "x"}, &d)
	if d.MountPath != "" {
		t.Errorf("mount_path %q without a mount", d.MountPath)
	}
	if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], "not mounted") {
		t.Errorf("warnings %q, want one saying depotfs is not mounted", env.Warnings)
	}
}

func TestCacheFileAppliedFails(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{
		Settings: mcpserver.Settings{MountPoint: testMount, Applied: func(ctx context.Context, rev uint64) error {
			return context.DeadlineExceeded
		}},
	})
	var d fileReply
	env := h.ok("guide_cache_file", map[string]any{"path": "/slow-mount", "content": "x"}, &d)
	if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], "mount did not confirm") {
		t.Errorf("warnings %q, want the mount warning", env.Warnings)
	}
	if _, ok := h.stat("/slow-mount"); !ok {
		t.Error("the write is committed even when the mount lags")
	}
}

func TestLogNeverHasContent(t *testing.T) {
	h := newHarness(t, nil)
	secret := "correct horse battery staple"
	h.ok("guide_cache_file", map[string]any{"path": "/secret.txt", "content": secret}, nil)
	h.fail("guide_cache_file", map[string]any{"path": "/secret.txt", "content": secret, "sha256": strings.Repeat("0", 64)}, "validation")
	h.ok("guide_read_file", map[string]any{"path": "/secret2.txt", "content": base64.StdEncoding.EncodeToString([]byte(secret)), "encoding": "base64"}, nil)
	logs := h.logs.String()
	if strings.Contains(logs, secret) || strings.Contains(logs, base64.StdEncoding.EncodeToString([]byte(secret))) {
		t.Fatalf("the log contains file content:\n%s", logs)
	}
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d log lines for 3 calls:\n%s", len(lines), logs)
	}
	for _, want := range []string{`"tool":"guide_cache_file"`, `"outcome":"ok"`, `"outcome":"validation"`, `"sha256":"` + sum([]byte(secret)) + `"`, `"path":"/secret.txt"`, `"identity":"test:tester"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
}
