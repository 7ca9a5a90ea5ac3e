package mcpserver_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestExpiryAndPin checks how ttl_seconds, pin and the upload TTL set an
// entry's expiry and pin, through every tool that stores a file.
func TestExpiryAndPin(t *testing.T) {
	const uploadTTL = time.Hour
	h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, UploadTTL: uploadTTL}})
	tests := []struct {
		name    string
		tool    string
		args    m
		wantTTL time.Duration // 0: never expires
		pinned  bool
	}{
		{"path, no ttl", "guide_cache_file", m{"path": "/plain", "content": "a"}, 0, false},
		{"path with ttl", "guide_cache_file", m{"path": "/ttl", "content": "b", "ttl_seconds": 100}, 100 * time.Second, false},
		{"path pinned", "guide_cache_file", m{"path": "/pinned", "content": "c", "pin": true}, 0, true},
		{"pinned with ttl", "guide_cache_file", m{"path": "/both", "content": "d", "ttl_seconds": 5, "pin": true}, 5 * time.Second, true},
		{"upload gets the upload ttl", "guide_cache_file", m{"filename": "u1.txt", "content": "e"}, uploadTTL, false},
		{"upload with pin false still expires", "guide_cache_file", m{"filename": "u2.txt", "content": "f", "pin": false}, uploadTTL, false},
		{"pinned upload never expires", "guide_cache_file", m{"filename": "u3.txt", "content": "g", "pin": true}, 0, true},
		{"upload with its own ttl", "guide_cache_file", m{"filename": "u4.txt", "content": "h", "ttl_seconds": 30}, 30 * time.Second, false},
		{"read_file whole", "guide_read_file", m{"path": "/rf", "content": "i", "ttl_seconds": 60, "pin": true}, 60 * time.Second, true},
		{"read_file chunked", "guide_read_file", m{"path": "/chunked", "upload_id": "c1", "chunk_index": 0, "chunk_count": 1,
			"content": "j", "sha256": sum([]byte("j")), "ttl_seconds": 7, "pin": true, "total_size": 1}, 7 * time.Second, true},
		{"read_file chunked upload", "guide_read_file", m{"filename": "u5.bin", "upload_id": "c2", "chunk_index": 0, "chunk_count": 1,
			"content": "k", "sha256": sum([]byte("k"))}, uploadTTL, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			before := time.Now()
			var d struct {
				fileReply
				Expires string `json:"expires"`
				Pinned  bool   `json:"pinned"`
			}
			h.ok(tt.tool, tt.args, &d)
			after := time.Now()
			e, ok := h.stat(d.Path)
			if !ok {
				t.Fatalf("%s not stored", d.Path)
			}
			if e.Pinned != tt.pinned || d.Pinned != tt.pinned {
				t.Errorf("pinned: entry %v, reply %v; want %v", e.Pinned, d.Pinned, tt.pinned)
			}
			if tt.wantTTL == 0 {
				if !e.Expires.IsZero() || d.Expires != "" {
					t.Errorf("expires %v (reply %q), want never", e.Expires, d.Expires)
				}
				return
			}
			if e.Expires.Before(before.Add(tt.wantTTL).Truncate(time.Second)) || e.Expires.After(after.Add(tt.wantTTL)) {
				t.Errorf("expires %v, want %v after the call", e.Expires, tt.wantTTL)
			}
			if got, err := time.Parse(time.RFC3339Nano, d.Expires); err != nil || !got.Equal(e.Expires) {
				t.Errorf("reply expires %q, entry %v", d.Expires, e.Expires)
			}
		})
	}
}

func TestUploadTTLOff(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, UploadTTL: -1}})
	var d fileReply
	h.ok("guide_cache_file", m{"filename": "keep.txt", "content": "x"}, &d)
	if e, _ := h.stat(d.Path); !e.Expires.IsZero() {
		t.Errorf("upload expires %v with the upload TTL off", e.Expires)
	}
}

// TestEvictionReply checks that a write that evicts reports what it
// evicted, in the data, the stats and a warning, and that a write that
// cannot fit is refused with a limit error and changes nothing.
func TestEvictionReply(t *testing.T) {
	h := startHarness(t, harnessConfig{store: &bolt.Options{MaxStoreBytes: 100}})
	data := func(c byte) string { return strings.Repeat(string(c), 40) }
	h.ok("guide_cache_file", m{"path": "/old", "content": data('a')}, nil)
	h.ok("guide_cache_file", m{"path": "/pinned", "content": data('b'), "pin": true}, nil)
	var d struct {
		fileReply
		Evicted *struct {
			Count int      `json:"count"`
			Bytes int64    `json:"bytes"`
			Paths []string `json:"paths"`
		} `json:"evicted"`
	}
	env := h.ok("guide_cache_file", m{"path": "/new", "content": data('c')}, &d)
	if d.Evicted == nil || d.Evicted.Count != 1 || d.Evicted.Bytes != 40 || len(d.Evicted.Paths) != 1 || d.Evicted.Paths[0] != "/old" {
		t.Fatalf("evicted %+v, want /old (40 bytes)", d.Evicted)
	}
	if env.Stats["evicted_files"] != float64(1) || env.Stats["evicted_bytes"] != float64(40) {
		t.Errorf("stats %v", env.Stats)
	}
	if _, ok := env.Stats["cache_hits"]; !ok {
		t.Errorf("stats lack cache_hits: %v", env.Stats)
	}
	if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], "/old") {
		t.Errorf("warnings %q", env.Warnings)
	}
	if e, _ := h.stat("/old"); e.Present {
		t.Errorf("/old still present after its eviction")
	}

	// Too large to ever fit, and too large to fit beside the pinned file:
	// refused, nothing stored, nothing evicted.
	for _, tt := range []struct {
		name, path, content string
	}{
		{"larger than the store", "/huge", strings.Repeat("h", 101)},
		{"only pinned content to evict", "/big", strings.Repeat("g", 70)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			rev := h.revision()
			env := h.fail("guide_cache_file", m{"path": tt.path, "content": tt.content}, "limit")
			if !strings.Contains(env.Error.Instruction, "limit") {
				t.Errorf("instruction %q", env.Error.Instruction)
			}
			if h.revision() != rev {
				t.Errorf("a refused write changed the store")
			}
			if e, _ := h.stat("/new"); !e.Present {
				t.Errorf("a refused write evicted /new")
			}
		})
	}
}

// TestFileSizeLimit checks the file size limit at the edge: a whole file,
// and a chunked upload at its first chunk, before the store holds a byte.
func TestFileSizeLimit(t *testing.T) {
	h := startHarness(t, harnessConfig{
		opts:  &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, MaxFileBytes: 50, MaxContentBytes: 40}},
		store: &bolt.Options{MaxFileBytes: 50},
	})
	whole := strings.Repeat("w", 60)
	tests := []struct {
		name string
		tool string
		args m
		want string
	}{
		{"announced total over the limit", "guide_read_file", m{"path": "/big", "upload_id": "u1", "chunk_index": 0, "chunk_count": 2,
			"content": whole[:30], "sha256": sum([]byte(whole)), "total_size": 60}, "file size limit of 50"},
		{"no total, the chunks bring more", "guide_read_file", m{"path": "/big", "upload_id": "u2", "chunk_index": 1, "chunk_count": 2,
			"content": whole[30:], "sha256": sum([]byte(whole)), "total_size": 0}, ""},
	}
	// The second case needs the first chunk of u2 stored first.
	h.ok("guide_read_file", m{"path": "/big", "upload_id": "u2", "chunk_index": 0, "chunk_count": 2,
		"content": whole[:30], "sha256": sum([]byte(whole))}, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			rev := h.revision()
			env := h.fail(tt.tool, tt.args, "limit")
			if !strings.Contains(env.Error.Message, tt.want) {
				t.Errorf("message %q does not say %q", env.Error.Message, tt.want)
			}
			if h.revision() != rev {
				t.Errorf("a refused chunk changed the store")
			}
			if _, ok := h.stat("/big"); ok {
				t.Errorf("/big exists after a refused upload")
			}
		})
	}
	// A whole file over the file limit but within the per-call limit.
	h2 := startHarness(t, harnessConfig{opts: &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, MaxFileBytes: 10}}})
	env := h2.fail("guide_cache_file", m{"path": "/eleven", "content": base64.StdEncoding.EncodeToString([]byte("eleven byte")), "encoding": "base64"}, "limit")
	if !strings.Contains(env.Error.Message, "11 bytes exceeds the depot's file size limit of 10") || h2.revision() != 0 {
		t.Errorf("message %q, revision %d", env.Error.Message, h2.revision())
	}
}

func TestCacheStats(t *testing.T) {
	h := startHarness(t, harnessConfig{
		opts:         &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, UploadTTL: 2 * time.Hour}},
		store:        &bolt.Options{MaxStoreBytes: 1 << 20, MaxFileBytes: 1 << 10},
		fetchTimeout: 50 * time.Millisecond,
	})
	h.ok("guide_cache_file", m{"path": "/one", "content": "same"}, nil)
	h.ok("guide_cache_file", m{"path": "/two", "content": "same"}, nil)
	h.declare("/wanted", 9, time.Time{})
	done, _ := h.reader("/wanted")
	if err := <-done; err == nil {
		t.Fatal("a fetch nobody answered succeeded")
	}
	var d mcpserver.CacheStats
	env := h.ok("guide_cache_stats", m{}, &d)
	s := d.Store
	if s.Files != 2 || s.Placeholders != 1 || s.Blobs != 1 || s.StoredBytes != 4 || s.LogicalBytes != 8 || s.DedupSavedBytes != 4 {
		t.Errorf("store stats %+v", s)
	}
	if f := d.Fetch; !f.Enabled || f.Requested != 1 || f.TimedOut != 1 || f.Withdrawn != 1 || f.Pending != 0 {
		t.Errorf("fetch stats %+v", f)
	}
	l := d.Limits
	if l.MaxStoreBytes != 1<<20 || l.MaxFileBytes != 1<<10 || l.FetchTimeoutSeconds != 0.05 || l.UploadTTLSeconds != 7200 || l.MaxContentBytes != mcpserver.DefaultMaxContentBytes {
		t.Errorf("limits %+v", l)
	}
	if d.Revision != h.revision() || !strings.Contains(env.Message, "2 files") {
		t.Errorf("revision %d, message %q", d.Revision, env.Message)
	}
	h.fail("guide_cache_stats", m{"verbose": true}, "validation")

	// Without a broker, fetching is reported off.
	h2 := newHarness(t, nil)
	h2.ok("guide_cache_stats", nil, &d)
	if d.Fetch.Enabled || d.Limits.FetchTimeoutSeconds != 0 {
		t.Errorf("without a broker: %+v %+v", d.Fetch, d.Limits)
	}
}
