package integration_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store/nats/natstest"
)

// snapFiles and snapWriters shape the snapshot consistency test: a tree
// of snapFiles files that snapWriters agents change and delete while a
// reader hashes the snapshot of it.
const (
	snapFiles   = 300
	snapWriters = 16
)

// TestSnapshotConsistency: a reader walks /.snapshots/S with find and
// sha256sum while 16 writers update and delete the live tree: every byte
// read matches the tree as it was when S was taken, and the live tree did
// change meanwhile. Deleting S frees the bytes it held (guide_cache_stats
// before and after). On bolt, and on a 3-node NATS cluster with the
// writers on the other hosts and the reader on the first host's mount.
func TestSnapshotConsistency(t *testing.T) {
	args := []string{"--rate-calls", "0", "--keep-versions", "0", "--tools", "guide,fs"}
	t.Run("bolt", func(t *testing.T) {
		t.Parallel()
		snapshotConsistency(t, []*daemon{startDaemon(t, daemonConfig{transport: overHTTP, args: args})})
	})
	t.Run("nats", func(t *testing.T) {
		t.Parallel()
		cluster := natstest.Start(t, 3)
		prefix := fmt.Sprintf("snap%d", depotSeq.Add(1))
		var ds []*daemon
		for range 3 {
			ds = append(ds, startDaemon(t, daemonConfig{transport: overHTTP,
				args: append([]string{"--store", cluster.URL(), "--nats-prefix", prefix}, args...)}))
		}
		snapshotConsistency(t, ds)
	})
}

// snapContent is the content of file i in generation gen.
func snapContent(i, gen int) string {
	return fmt.Sprintf("file %d generation %d\n%s", i, gen, strings.Repeat(fmt.Sprint(i), 100+i%50))
}

func snapshotConsistency(t *testing.T, ds []*daemon) {
	reader := ds[0]
	want := map[string]string{} // path below /tree → sha256
	files := make([]map[string]any, 0, snapFiles)
	for i := range snapFiles {
		p := fmt.Sprintf("d%d/f%d.txt", i%10, i)
		c := snapContent(i, 0)
		want[p] = sha256hex([]byte(c))
		files = append(files, map[string]any{"path": "/tree/" + p, "content": c})
		if len(files) == 100 || i == snapFiles-1 {
			reader.mustCall("guide_cache_files", map[string]any{"files": files})
			files = files[:0]
		}
	}
	reader.mustCall("guide_snapshot", map[string]any{"action": "create", "name": "S", "path": "/tree"})

	// Writers update and delete the live tree until the reader is done.
	var stop atomic.Bool
	var changes atomic.Int64
	var wg sync.WaitGroup
	for w := range snapWriters {
		d := ds[(w+1)%len(ds)]
		c := d.connect(clientAuth{}).mcp
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for gen := 1; !stop.Load(); gen++ {
				i := rng.IntN(snapFiles)
				p := fmt.Sprintf("/tree/d%d/f%d.txt", i%10, i)
				if gen%4 == 0 {
					// A file another writer deleted first is not_found.
					var fe *fsError
					if err := (fsClient{c}).call("delete", map[string]any{"path": p}, nil); err != nil && !(errors.As(err, &fe) && fe.Code == "not_found") {
						t.Errorf("writer %d: delete %s: %v", w, p, err)
						return
					}
				} else if env, err := callWith(c, "guide_cache_file", map[string]any{"path": p, "content": snapContent(i, gen)}); err != nil || !env.Success {
					t.Errorf("writer %d: %v %+v", w, err, env.Error)
					return
				}
				changes.Add(1)
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	waitFor(t, 30*time.Second, "the writers to start", func() bool { return changes.Load() >= snapWriters })

	root := reader.path("/.snapshots/S")
	for pass := range 3 {
		got := hashTree(t, root)
		if len(got) != len(want) {
			t.Errorf("pass %d: the snapshot shows %d files, want %d", pass, len(got), len(want))
		}
		for p, sum := range want {
			if got[p] != sum {
				t.Errorf("pass %d: %s hashes to %q in the snapshot, want %q", pass, p, got[p], sum)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if changes.Load() < snapWriters*2 {
		t.Errorf("only %d changes to the live tree during the walk", changes.Load())
	}
	live := hashTree(t, reader.path("/tree"))
	changed := 0
	for p, sum := range want {
		if live[p] != sum {
			changed++
		}
	}
	if changed == 0 {
		t.Error("the live tree did not change: the test proves nothing")
	}
	t.Logf("%d changes during the walk; %d of %d files differ from the snapshot", changes.Load(), changed, len(want))

	held := storeStat(t, reader, "held_bytes")
	if held <= 0 {
		t.Fatalf("held_bytes %d with a snapshot of a changed tree", held)
	}
	stored := storeStat(t, reader, "stored_bytes")
	reader.mustCall("guide_snapshot", map[string]any{"action": "delete", "name": "S"})
	waitFor(t, 10*time.Second, "the snapshot's bytes to be freed", func() bool {
		return storeStat(t, reader, "held_bytes") == 0
	})
	if after := storeStat(t, reader, "stored_bytes"); after > stored-held {
		t.Errorf("stored_bytes %d after deleting S, want at most %d (%d before, %d held)", after, stored-held, stored, held)
	}
}

// hashTree runs find and sha256sum over root and returns each file's hash
// by its path below root.
func hashTree(t testing.TB, root string) map[string]string {
	t.Helper()
	cmd := exec.Command("sh", "-c", `find . -type f -print0 | xargs -0 sha256sum`)
	cmd.Dir = root
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("find | sha256sum in %s: %v\n%s", root, err, errOut.String())
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		sum, p, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("sha256sum line %q", sc.Text())
		}
		got[strings.TrimPrefix(p, "./")] = sum
	}
	return got
}

// storeStat returns one of guide_cache_stats's store figures.
func storeStat(t testing.TB, d *daemon, name string) int64 {
	t.Helper()
	env := d.mustCall("guide_cache_stats", map[string]any{})
	st, _ := env.Data["store"].(map[string]any)
	v, ok := st[name].(float64)
	if !ok {
		t.Fatalf("guide_cache_stats has no store.%s: %v", name, env.Data)
	}
	return int64(v)
}

// TestHistoryThroughTheMount: 10 updates of a file, then restoring the
// third: the mount shows exactly its bytes. With --keep-versions 0 no
// earlier version is kept, and a restore is refused, changing nothing.
func TestHistoryThroughTheMount(t *testing.T) {
	t.Run("kept", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--keep-versions", "10"}})
		revs, contents := tenUpdates(d)
		env := d.mustCall("guide_file_history", map[string]any{"path": "/doc.txt"})
		if vs, _ := env.Data["versions"].([]any); len(vs) != 10 {
			t.Fatalf("history has %d versions, want 10: %v", len(vs), env.Data)
		}
		d.mustCall("guide_restore", map[string]any{"path": "/doc.txt", "revision": revs[2]})
		got, err := os.ReadFile(d.path("/doc.txt"))
		if err != nil || !bytes.Equal(got, contents[2]) {
			t.Errorf("the mount shows %d bytes (%v), want the third version's %d", len(got), err, len(contents[2]))
		}
	})
	t.Run("none", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--keep-versions", "0"}})
		revs, contents := tenUpdates(d)
		env := d.mustCall("guide_file_history", map[string]any{"path": "/doc.txt"})
		if vs, _ := env.Data["versions"].([]any); len(vs) != 1 {
			t.Errorf("history has %d versions with --keep-versions 0, want the live one: %v", len(vs), env.Data)
		}
		before := snapshot(t, d.mount)
		if env := d.call("guide_restore", map[string]any{"path": "/doc.txt", "revision": revs[2]}); env.Success || env.Error.Type != "not_found" {
			t.Errorf("restoring a version not kept: %+v", env)
		}
		if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
			t.Errorf("a refused restore changed the mount:\n%s", diff)
		}
		if got, _ := os.ReadFile(d.path("/doc.txt")); !bytes.Equal(got, contents[9]) {
			t.Error("the file is not its last version")
		}
		if n := storeStat(t, d, "versions"); n != 0 {
			t.Errorf("%d versions kept with --keep-versions 0", n)
		}
	})
}

// tenUpdates writes /doc.txt ten times and returns each version's revision
// and bytes.
func tenUpdates(d *daemon) ([]uint64, [][]byte) {
	var revs []uint64
	var contents [][]byte
	for i := range 10 {
		c := pseudoRandom(4096+i*100, uint64(i))
		env := d.mustCall("guide_cache_file", map[string]any{"path": "/doc.txt", "content": base64.StdEncoding.EncodeToString(c), "encoding": "base64"})
		revs = append(revs, uint64(env.Data["revision"].(float64)))
		contents = append(contents, c)
	}
	return revs, contents
}

// TestEvictionKeepsHeldVersions: a store full of writes evicts live files
// but never a version a snapshot holds; once held content leaves no room, a
// write is refused with a limit error naming the snapshot holding the
// most, and the snapshots still read back.
func TestEvictionKeepsHeldVersions(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-store-size", "64KiB", "--max-file-size", "16KiB", "--keep-versions", "0", "--rate-calls", "0"}})
	put := func(p string, data []byte) envelope {
		return d.call("guide_cache_file", map[string]any{"path": p, "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"})
	}
	kept := pseudoRandom(16<<10, 7)
	put("/keep/a.bin", kept)
	d.mustCall("guide_snapshot", map[string]any{"action": "create", "name": "hold", "path": "/keep"})
	put("/keep/a.bin", pseudoRandom(16<<10, 8))
	evictions := 0
	for i := range 20 {
		env := put(fmt.Sprintf("/fill/%d.bin", i), pseudoRandom(12<<10, uint64(100+i)))
		if !env.Success {
			t.Fatalf("write %d refused with only 16 KiB of 64 held: %+v", i, env.Error)
		}
		if ev, ok := env.Data["evicted"].(map[string]any); ok {
			evictions += int(ev["count"].(float64))
		}
	}
	if evictions == 0 {
		t.Error("no write evicted anything: the store never filled")
	}
	if got, err := os.ReadFile(d.path("/.snapshots/hold/a.bin")); err != nil || !bytes.Equal(got, kept) {
		t.Fatalf("the held version reads back %d bytes (%v), want %d", len(got), err, len(kept))
	}

	// Hold 45 KiB more, then make the live files tiny: only held content
	// is left to evict.
	var more [][]byte
	for i, name := range []string{"b", "c", "d"} {
		more = append(more, pseudoRandom(15<<10, uint64(200+i)))
		if env := put("/keep/"+name+".bin", more[i]); !env.Success {
			t.Fatalf("write %s: %+v", name, env.Error)
		}
	}
	d.mustCall("guide_snapshot", map[string]any{"action": "create", "name": "hold-more", "path": "/keep"})
	for _, name := range []string{"a", "b", "c", "d"} {
		put("/keep/"+name+".bin", []byte("tiny"))
	}
	env := put("/fill/last.bin", pseudoRandom(12<<10, 300))
	if env.Success || env.Error.Type != "limit" || !strings.Contains(env.Error.Message, "hold-more") {
		t.Errorf("a write with only held content to evict: %+v, want a limit error naming hold-more", env.Error)
	}
	for i, name := range []string{"b", "c", "d"} {
		if got, err := os.ReadFile(d.path("/.snapshots/hold-more/" + name + ".bin")); err != nil || !bytes.Equal(got, more[i]) {
			t.Errorf("hold-more/%s.bin reads back %d bytes (%v)", name, len(got), err)
		}
	}
}

// TestSnapshotTenantsThroughTheBinary: an identity with fewer grants
// neither sees nor deletes nor restores from another's snapshot, bad
// input is refused, and none of it changes the depot.
func TestSnapshotTenantsThroughTheBinary(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	tokA, _ := issueToken(t, tokens, "a", "*:/a:rw")
	tokB, _ := issueToken(t, tokens, "b", "*:/b:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tokA}, args: []string{"--tokens", tokens}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/a/secret.txt", "content": "a's"})
	d.mustCall("guide_snapshot", map[string]any{"action": "create", "name": "a-snap", "path": "/a"})
	b := d.connect(clientAuth{bearer: tokB}).mcp
	if env, err := callWith(b, "guide_cache_file", map[string]any{"path": "/b/mine.txt", "content": "b's"}); err != nil || !env.Success {
		t.Fatalf("b writes its own: %v %+v", err, env.Error)
	}
	before := snapshot(t, d.mount)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"guide_snapshot", map[string]any{"action": "delete", "name": "a-snap"}, "not_found"},
		{"guide_snapshot", map[string]any{"action": "create", "name": "b-snap", "path": "/a"}, "security"},
		{"guide_restore", map[string]any{"path": "/b/mine.txt", "snapshot": "a-snap"}, "not_found"},
		{"guide_file_history", map[string]any{"path": "/a/secret.txt"}, "security"},
		{"guide_snapshot", map[string]any{"action": "create", "name": "bad/name", "path": "/b"}, "validation"},
		{"guide_restore", map[string]any{"path": "/b/mine.txt", "revision": 999999}, "not_found"},
	} {
		env, err := callWith(b, c.tool, c.args)
		if err != nil || env.Success || env.Error.Type != c.want {
			t.Errorf("b: %s %v: %v %+v, want %s", c.tool, c.args, err, env.Error, c.want)
		}
		if p, _ := c.args["path"].(string); env.Error != nil && !strings.HasPrefix(p, "/a") && strings.Contains(env.Error.Message, "/a") {
			t.Errorf("b: %s %v: the error names a's path: %s", c.tool, c.args, env.Error.Message)
		}
	}
	env, err := callWith(b, "guide_snapshot", map[string]any{"action": "list"})
	if err != nil || !env.Success {
		t.Fatalf("b lists: %v %+v", err, env.Error)
	}
	if list, _ := env.Data["snapshots"].([]any); len(list) != 0 {
		t.Errorf("b sees %v", list)
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused calls changed the mount:\n%s", diff)
	}
	// a's snapshot is in the mount under its name and a's tenant suffix.
	if m, err := filepath.Glob(d.path("/.snapshots/a-snap.*/secret.txt")); err != nil || len(m) != 1 {
		t.Errorf("a's snapshot in the mount: %v %v", m, err)
	}
}

// TestSnapshotCommand: depotfs snapshot create, list and delete reach the
// running server as status does, and a snapshot made there reads back
// through the mount.
func TestSnapshotCommand(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/proj/a.txt", "content": "first"})
	if code, out, errOut := runDepotfs(t, "snapshot", "create", "nightly", "--url", d.url, "--path", "/proj", "--ttl", "1h"); code != 0 || !strings.Contains(out, "nightly") {
		t.Fatalf("snapshot create: exit %d\n%s%s", code, out, errOut)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/proj/a.txt", "content": "second"})
	if got, err := os.ReadFile(d.path("/.snapshots/nightly/a.txt")); err != nil || string(got) != "first" {
		t.Errorf("the snapshot reads %q (%v)", got, err)
	}
	code, out, errOut := runDepotfs(t, "snapshot", "list", "--url", d.url, "--json")
	if code != 0 || !strings.Contains(out, `"name": "nightly"`) || !strings.Contains(out, `"path": "/proj"`) || !strings.Contains(out, `"expires"`) {
		t.Errorf("snapshot list --json: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runDepotfs(t, "snapshot", "delete", "nightly", "--url", d.url); code != 0 {
		t.Errorf("snapshot delete: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runDepotfs(t, "snapshot", "delete", "nightly", "--url", d.url); code == 0 || !strings.Contains(errOut, "nightly") {
		t.Errorf("deleting an unknown snapshot: exit %d\n%s%s", code, out, errOut)
	}
}
