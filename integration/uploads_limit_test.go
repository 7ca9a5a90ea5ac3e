package integration_test

import (
	"encoding/base64"
	"testing"
	"time"
)

// TestAbandonedUploadCountsAndIsReclaimed (issue 11 point 12): the chunks
// of an upload left incomplete count against --max-store-size, so a write
// that needs their room is refused with a limit error; a restart with a
// short --upload-timeout reclaims them and the same write then succeeds.
func TestAbandonedUploadCountsAndIsReclaimed(t *testing.T) {
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: limitArgs})
	// 50 KB pinned: nothing else evictable.
	pushBytes(d, "/keep/pinned", pseudoRandom(50000, 1), map[string]any{"pin": true})

	// Two of three 20 KB chunks of an upload, then it is abandoned.
	data := pseudoRandom(60000, 2)
	whole := sha256hex(data)
	for i := range 2 {
		chunk := data[i*20000 : (i+1)*20000]
		env := d.mustCall("guide_read_file", map[string]any{
			"path": "/up/abandoned", "upload_id": "abandoned", "chunk_index": i, "chunk_count": 3,
			"content": base64.StdEncoding.EncodeToString(chunk), "encoding": "base64",
			"chunk_sha256": sha256hex(chunk), "sha256": whole,
		})
		if uploadComplete(env) {
			t.Fatalf("chunk %d of 3 completed the upload: %+v", i, env.Data)
		}
	}
	st := cacheStats(d)["store"]
	if st["uploads"] != 1 || st["upload_bytes"] != 40000 || st["stored_bytes"] != 50000 {
		t.Fatalf("store stats with an upload in progress: %v", st)
	}

	// 50 KB pinned + 40 KB of chunks + 30 KB is over 100 KiB.
	next := pseudoRandom(30000, 3)
	env := d.call("guide_cache_file", map[string]any{
		"path": "/next", "content": base64.StdEncoding.EncodeToString(next), "encoding": "base64",
	})
	if env.Success || env.Error == nil || env.Error.Type != "limit" {
		t.Fatalf("a write needing the abandoned upload's room: %+v", env)
	}

	d.cfg.args = append(append([]string{}, limitArgs...), "--upload-timeout", "1s")
	d = d.restart()
	waitFor(t, 15*time.Second, "the abandoned upload to be deleted", func() bool {
		st := cacheStats(d)["store"]
		return st["uploads"] == 0 && st["upload_bytes"] == 0
	})
	pushBytes(d, "/next", next, nil)
	if st := cacheStats(d)["store"]; st["stored_bytes"] != 80000 {
		t.Errorf("stored bytes after the write: %v", st)
	}
}
