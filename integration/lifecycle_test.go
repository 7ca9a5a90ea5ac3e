package integration_test

import (
	"encoding/base64"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// limitArgs give a daemon a store of 100 KiB, so a few 20 KB files fill it.
var limitArgs = []string{"--max-store-size", "100KiB", "--max-file-size", "100KiB"}

// pushBytes stores data at p with guide_cache_file; extra arguments (pin,
// ttl_seconds) are added to the call. It returns the reply.
func pushBytes(d *daemon, p string, data []byte, extra map[string]any) envelope {
	d.t.Helper()
	args := map[string]any{"path": p, "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"}
	for k, v := range extra {
		args[k] = v
	}
	return d.mustCall("guide_cache_file", args)
}

// evicted returns the paths a write's reply says it evicted, checking that
// the data's report and the stats agree.
func evicted(t *testing.T, env envelope) []string {
	t.Helper()
	ev, _ := env.Data["evicted"].(map[string]any)
	var paths []string
	var bytes float64
	if ev != nil {
		for _, p := range ev["paths"].([]any) {
			paths = append(paths, p.(string))
		}
		bytes = ev["bytes"].(float64)
		if int(ev["count"].(float64)) != len(paths) {
			t.Errorf("evicted count %v with paths %v", ev["count"], paths)
		}
	}
	if env.Stats["evicted_files"] != float64(len(paths)) || env.Stats["evicted_bytes"] != bytes {
		t.Errorf("stats evicted_files %v evicted_bytes %v, data says %d files, %v bytes", env.Stats["evicted_files"], env.Stats["evicted_bytes"], len(paths), bytes)
	}
	return paths
}

// catFile reads a file through the mount with cat, which counts as a use
// of the file for the LRU order.
func catFile(t *testing.T, d *daemon, p string) []byte {
	t.Helper()
	return []byte(runProgram(t, "cat", d.path(p)))
}

// listing returns `ls -l --time-style=full-iso` of a mount directory: what
// an operator sees, without opening any file (so without using one).
func listing(t *testing.T, d *daemon, dir string) string {
	t.Helper()
	return runProgram(t, "ls", "-l", "--time-style=full-iso", d.path(dir))
}

// cacheStats returns guide_cache_stats' data.
func cacheStats(d *daemon) map[string]map[string]float64 {
	d.t.Helper()
	env := d.mustCall("guide_cache_stats", map[string]any{})
	out := map[string]map[string]float64{}
	for _, part := range []string{"store", "fetch", "limits"} {
		out[part] = map[string]float64{}
		m, _ := env.Data[part].(map[string]any)
		for k, v := range m {
			if f, ok := v.(float64); ok {
				out[part][k] = f
			}
		}
	}
	return out
}

// TestEvictionLRU is Proof 1: with a small --max-store-size, writes evict
// the least recently used unpinned files (a file read through the mount
// recently survives one that was not), the replies' eviction reports match,
// a pinned file is never evicted, and a file that can never fit is refused
// with the mount unchanged.
func TestEvictionLRU(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: limitArgs})
	content := map[string][]byte{}
	for i, name := range []string{"pinned", "a", "b", "c"} {
		content[name] = pseudoRandom(20000, uint64(100+i))
	}
	pushBytes(d, "/lru/pinned", content["pinned"], map[string]any{"pin": true})
	for _, name := range []string{"a", "b", "c"} {
		if ev := evicted(t, pushBytes(d, "/lru/"+name, content[name], nil)); len(ev) != 0 {
			t.Fatalf("pushing %s evicted %v with the store not full", name, ev)
		}
	}

	// Too large ever to fit: refused, and the mount is unchanged. (The
	// snapshots read every file, in name order: a, b, c, pinned.)
	before := snapshot(t, d.mount)
	env := d.call("guide_cache_file", map[string]any{
		"path": "/lru/huge", "content": base64.StdEncoding.EncodeToString(pseudoRandom(150000, 9)), "encoding": "base64",
	})
	if env.Success || env.Error.Type != "limit" {
		t.Fatalf("a file over the limits: %+v", env)
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Fatalf("a refused file changed the mount:\n%s", diff)
	}

	// Read a through the mount: now b is the least recently used.
	if got := catFile(t, d, "/lru/a"); sha256hex(got) != sha256hex(content["a"]) {
		t.Fatal("cat /lru/a printed other bytes")
	}
	content["d"] = pseudoRandom(30000, 104)
	env = pushBytes(d, "/lru/d", content["d"], nil)
	if ev := evicted(t, env); !slices.Equal(ev, []string{"/lru/b"}) || env.Data["evicted"].(map[string]any)["bytes"] != float64(20000) {
		t.Fatalf("pushing d evicted %v (%v), want /lru/b (20000 bytes)", ev, env.Data["evicted"])
	}
	if len(env.Warnings) == 0 || !strings.Contains(strings.Join(env.Warnings, " "), "/lru/b") {
		t.Errorf("no warning names the evicted file: %q", env.Warnings)
	}
	content["e"] = pseudoRandom(30000, 105)
	if ev := evicted(t, pushBytes(d, "/lru/e", content["e"], nil)); !slices.Equal(ev, []string{"/lru/c"}) {
		t.Fatalf("pushing e evicted %v, want /lru/c", ev)
	}

	// What is left evictable (a, d, e) cannot make room for 90000 bytes
	// beside the pinned file: refused, nothing evicted.
	statsBefore := cacheStats(d)
	env = d.call("guide_cache_file", map[string]any{
		"path": "/lru/f", "content": base64.StdEncoding.EncodeToString(pseudoRandom(90000, 106)), "encoding": "base64",
	})
	if env.Success || env.Error.Type != "limit" {
		t.Fatalf("a file that cannot fit beside the pinned one: %+v", env)
	}
	if after := cacheStats(d); after["store"]["evictions"] != statsBefore["store"]["evictions"] || after["store"]["files"] != statsBefore["store"]["files"] {
		t.Errorf("a refused write evicted: %v -> %v", statsBefore["store"], after["store"])
	}

	// The evicted files are still listed, as placeholders with their size;
	// everything else reads back whole; the pinned file was never evicted.
	ls := listing(t, d, "/lru")
	for _, name := range []string{"a", "b", "c", "d", "e", "pinned"} {
		if !strings.Contains(ls, " "+name+"\n") {
			t.Errorf("ls does not show %s:\n%s", name, ls)
		}
	}
	for name, size := range map[string]int64{"b": 20000, "c": 20000} {
		if fi, err := os.Stat(d.path("/lru/" + name)); err != nil || fi.Size() != size {
			t.Errorf("evicted %s: stat %v, %v; want a placeholder of %d bytes", name, fi, err, size)
		}
	}
	for _, name := range []string{"pinned", "a", "d", "e"} {
		if got := catFile(t, d, "/lru/"+name); sha256hex(got) != sha256hex(content[name]) {
			t.Errorf("/lru/%s reads other bytes after the evictions", name)
		}
	}
	st := cacheStats(d)
	if st["store"]["evictions"] != 2 || st["store"]["evicted_bytes"] != 40000 || st["store"]["placeholders"] != 2 || st["limits"]["max_store_bytes"] != 102400 {
		t.Errorf("guide_cache_stats: %v %v", st["store"], st["limits"])
	}
}

// TestExpiry is Proof 2: an entry with ttl_seconds 1 disappears from ls
// once expired, a pinned one with a TTL stays, and the /uploads default TTL
// applies to filename-only uploads.
func TestExpiry(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--upload-ttl", "2s"}})
	pushed := time.Now()
	d.mustCall("guide_cache_file", map[string]any{"path": "/ttl/short", "content": "gone soon", "ttl_seconds": 1})
	d.mustCall("guide_cache_file", map[string]any{"path": "/ttl/pinned", "content": "stays", "ttl_seconds": 1, "pin": true})
	d.mustCall("guide_cache_file", map[string]any{"path": "/ttl/forever", "content": "no ttl"})
	upload := d.mustCall("guide_cache_file", map[string]any{"filename": "bridge.txt", "content": "bridged"})
	kept := d.mustCall("guide_cache_file", map[string]any{"filename": "keep.txt", "content": "kept", "pin": true})
	uploadPath, _ := upload.Data["path"].(string)
	keptPath, _ := kept.Data["path"].(string)
	if upload.Data["expires"] == nil || kept.Data["expires"] != nil {
		t.Fatalf("upload expires %v, pinned upload expires %v", upload.Data["expires"], kept.Data["expires"])
	}
	// /ttl/short is visible until it expires. Only a listing that
	// started within its TTL may be required to show it: on a loaded
	// machine the calls above can take a second, and an entry that
	// expires while a program lists the directory may be listed or not.
	names := dirNames(t, d.path("/ttl"))
	if !slices.Contains(names, "short") && time.Since(pushed) < 900*time.Millisecond {
		t.Fatalf("/ttl right after the push: %v", names)
	}

	waitFor(t, 30*time.Second, "/ttl/short and the upload to expire", func() bool {
		_, err := os.Stat(d.path(uploadPath))
		return !slices.Contains(dirNames(t, d.path("/ttl")), "short") && os.IsNotExist(err)
	})
	if got := strings.Fields(runProgram(t, "ls", d.path("/ttl"))); !slices.Equal(got, []string{"forever", "pinned"}) {
		t.Errorf("ls /ttl after expiry = %v, want forever and pinned", got)
	}
	if got := runProgram(t, "cat", d.path(keptPath)); got != "kept" {
		t.Errorf("the pinned upload reads %q", got)
	}
	if st := cacheStats(d); st["store"]["expiries"] != 2 || st["limits"]["upload_ttl_seconds"] != 2 {
		t.Errorf("stats after expiry: %v %v", st["store"], st["limits"])
	}
}

// TestRestartKeepsLifecycle is Proof 6: a restart keeps the entries, the
// pins, the TTLs and the LRU order (approximately: reads are persisted at
// shutdown).
func TestRestartKeepsLifecycle(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: limitArgs})
	content := map[string][]byte{}
	for i, name := range []string{"pinned", "a", "b", "c"} {
		content[name] = pseudoRandom(20000, uint64(200+i))
	}
	pushBytes(d, "/keep/pinned", content["pinned"], map[string]any{"pin": true})
	for _, name := range []string{"a", "b", "c"} {
		pushBytes(d, "/keep/"+name, content[name], nil)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/keep/ttl", "content": "expires after the restart", "ttl_seconds": 4})
	catFile(t, d, "/keep/a") // least recently used now: b, then c
	before := listing(t, d, "/keep")

	if !strings.Contains(before, " ttl\n") {
		t.Fatalf("ls /keep before the restart:\n%s", before)
	}
	d = d.restart()
	// The TTL file may expire while depotfs restarts; everything else is
	// listed exactly as before.
	withoutTTL := func(ls string) string {
		lines := strings.Split(ls, "\n")
		return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return strings.HasSuffix(l, " ttl") || strings.HasPrefix(l, "total ") }), "\n")
	}
	if after := listing(t, d, "/keep"); withoutTTL(after) != withoutTTL(before) {
		t.Errorf("ls /keep changed across the restart:\n%s\n---\n%s", before, after)
	}
	// Eviction after the restart takes b: the pinned file, older than all,
	// is still pinned, and a's read before the restart still counts.
	content["d"] = pseudoRandom(30000, 204)
	if ev := evicted(t, pushBytes(d, "/keep/d", content["d"], nil)); !slices.Equal(ev, []string{"/keep/b"}) {
		t.Errorf("after the restart, pushing d evicted %v, want /keep/b", ev)
	}
	for _, name := range []string{"pinned", "a", "c", "d"} {
		if got := catFile(t, d, "/keep/"+name); sha256hex(got) != sha256hex(content[name]) {
			t.Errorf("/keep/%s reads other bytes after the restart", name)
		}
	}
	// The TTL survived too: the file expires on time.
	waitFor(t, 30*time.Second, "/keep/ttl to expire after the restart", func() bool {
		_, err := os.Stat(d.path("/keep/ttl"))
		return os.IsNotExist(err)
	})
}

// dirNames lists a directory of the mount by name only (getdents, no stat
// of each entry), so an entry that disappears meanwhile cannot fail it.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}
