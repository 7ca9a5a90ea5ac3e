package integration_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestAbandonedUploadCountsAndIsReclaimed : the chunks
// of an upload left incomplete count against --max-store-size, so a write
// that needs their room is refused with a limit error; a restart with a
// short --upload-timeout reclaims them and the same write then succeeds.
func TestAbandonedUploadCountsAndIsReclaimed(t *testing.T) {
	t.Parallel()
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

// TestUploadsListAndDropLive (operator reclaim): with
// the server running, "depotfs uploads list" shows the uploads in progress
// and "depotfs uploads drop" frees an abandoned one's room at once (by
// id, then by idle time), each drop audited with the upload's path; a
// write the abandoned upload blocked then succeeds. No restart.
func TestUploadsListAndDropLive(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: limitArgs})
	pushBytes(d, "/keep/pinned", pseudoRandom(50000, 1), map[string]any{"pin": true})
	sendChunks := func(path, id string, data []byte, count, n int) {
		t.Helper()
		size := len(data) / count
		for i := range n {
			chunk := data[i*size : (i+1)*size]
			env := d.mustCall("guide_read_file", map[string]any{
				"path": path, "upload_id": id, "chunk_index": i, "chunk_count": count,
				"content": base64.StdEncoding.EncodeToString(chunk), "encoding": "base64", "sha256": sha256hex(data),
			})
			if uploadComplete(env) {
				t.Fatalf("chunk %d of %d of %s completed it", i, count, id)
			}
		}
	}
	sendChunks("/up/abandoned", "abandoned", pseudoRandom(60000, 2), 3, 2) // 40 KB held
	sendChunks("/up/active", "active", pseudoRandom(20000, 3), 2, 1)       // 10 KB held

	uploads := func(args ...string) (int, string, string) {
		return runDepotfs(t, append(append([]string{"uploads"}, args...), "--url", d.url)...)
	}
	code, out, errOut := uploads("list", "--json")
	if code != 0 {
		t.Fatalf("uploads list: exit %d\n%s%s", code, out, errOut)
	}
	var list struct {
		Uploads []struct {
			UploadID       string `json:"upload_id"`
			Path           string `json:"path"`
			ReceivedChunks int    `json:"received_chunks"`
			ReceivedBytes  int64  `json:"received_bytes"`
		} `json:"uploads"`
		Bytes int64 `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("uploads list --json: %v\n%s", err, out)
	}
	if len(list.Uploads) != 2 || list.Uploads[0].UploadID != "abandoned" || list.Uploads[0].Path != "/up/abandoned" ||
		list.Uploads[0].ReceivedChunks != 2 || list.Uploads[0].ReceivedBytes != 40000 || list.Uploads[1].UploadID != "active" || list.Bytes != 50000 {
		t.Fatalf("uploads list --json: %s", out)
	}
	if _, out, _ := uploads("list"); !strings.Contains(out, "abandoned") || !strings.Contains(out, "/up/active") || !strings.Contains(out, "2/3") {
		t.Errorf("uploads list (table):\n%s", out)
	}

	// 50 KB pinned + 50 KB of chunks: 30 KB more does not fit.
	next := pseudoRandom(30000, 4)
	if env := d.call("guide_cache_file", map[string]any{"path": "/next", "content": base64.StdEncoding.EncodeToString(next), "encoding": "base64"}); env.Success {
		t.Fatal("a write needing the abandoned upload's room succeeded")
	}

	if code, _, _ := uploads("drop"); code != 2 {
		t.Errorf("uploads drop with neither ids nor --idle: exit %d, want 2 (usage)", code)
	}
	code, out, errOut = uploads("drop", "abandoned", "nope")
	if code != 0 || !strings.Contains(out, "dropped abandoned (/up/abandoned") || !strings.Contains(out, "kept nope: not_found") {
		t.Fatalf("uploads drop abandoned nope: exit %d\n%s%s", code, out, errOut)
	}
	if st := cacheStats(d)["store"]; st["uploads"] != 1 || st["upload_bytes"] != 10000 {
		t.Fatalf("store stats after the drop: %v", st)
	}
	pushBytes(d, "/next", next, nil)

	// By idle time: the remaining upload is recent, so --idle 1h keeps it
	// and --idle 0 drops it.
	if code, out, _ := uploads("drop", "--idle", "1h"); code != 0 || !strings.Contains(out, "0 upload(s) dropped") {
		t.Errorf("uploads drop --idle 1h: exit %d\n%s", code, out)
	}
	if code, out, _ := uploads("drop", "--idle", "0"); code != 0 || !strings.Contains(out, "dropped active") {
		t.Errorf("uploads drop --idle 0: exit %d\n%s", code, out)
	}
	if st := cacheStats(d)["store"]; st["uploads"] != 0 || st["upload_bytes"] != 0 {
		t.Errorf("store stats after dropping everything: %v", st)
	}

	// Every drop is audited with the paths it dropped and the caller.
	var drops []string
	for _, r := range auditRecords(t, d.auditLog()) {
		if r.Tool == "guide_drop_uploads" && r.Error == "" {
			drops = append(drops, strings.Join(r.Paths, ","))
		}
	}
	if len(drops) != 3 || !strings.Contains(drops[0], "/up/abandoned") || !strings.Contains(drops[2], "/up/active") {
		t.Errorf("audited drops (paths per record): %q", drops)
	}
}
