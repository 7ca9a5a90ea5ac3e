package integration_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writeSeedExport writes an export of n small files under /seed to file,
// for import into a depot, and returns their contents by path.
func writeSeedExport(t testing.TB, file string, n int) map[string][]byte {
	t.Helper()
	var manifest bytes.Buffer
	seed := map[string][]byte{}
	var paths []string
	for i := range n {
		p := fmt.Sprintf("/seed/d%02d/f%04d.txt", i%30, i)
		data := []byte(fmt.Sprintf("seed file %d\n%s", i, pseudoRandom(200, uint64(i))))
		seed[p] = data
		paths = append(paths, p)
		line, _ := json.Marshal(map[string]any{"path": p, "type": "file", "sha256": sha256hex(data), "size": len(data)})
		manifest.Write(append(line, '\n'))
	}
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	add := func(name string, b []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Size: int64(len(b)), Mode: 0o600, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := json.Marshal(map[string]any{"format": 1, "revision": 1, "created": time.Now().UTC(), "entries": n})
	add("depotfs-export.json", h)
	add("manifest.jsonl", manifest.Bytes())
	for _, p := range paths {
		add("files"+p, seed[p])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return seed
}

// liveWriters runs n writers on d, each writing its own paths every
// interval (0: as fast as it can), until stop is called; stop returns
// every acknowledged write.
func liveWriters(t *testing.T, d *daemon, n int, interval time.Duration) (stop func() []written) {
	var halt atomic.Bool
	var mu sync.Mutex
	var writes []written
	var wg sync.WaitGroup
	for w := range n {
		c := d.connect(clientAuth{}).mcp
		wg.Go(func() {
			for i := 0; !halt.Load(); i++ {
				p := fmt.Sprintf("/live/w%d/f%d.txt", w, i%20)
				data := []byte(fmt.Sprintf("writer %d write %d\n", w, i))
				env, err := callWith(c, "guide_cache_file", map[string]any{"path": p, "content": string(data)})
				if err != nil || !env.Success {
					t.Errorf("writer %d: %v %+v\ndaemon log tail:\n%s", w, err, env.Error, tail(d.logs.String(), 20))
					return
				}
				mu.Lock()
				writes = append(writes, written{p, data, uint64(env.Data["revision"].(float64))})
				mu.Unlock()
				time.Sleep(interval)
			}
		})
	}
	waitFor(t, 60*time.Second, "the writers to start", func() bool { mu.Lock(); defer mu.Unlock(); return len(writes) >= n })
	return func() []written {
		halt.Store(true)
		wg.Wait()
		return writes
	}
}

// checkExportAt checks that the export in file is the tree at revision
// rev: the seed files byte for byte, and under /live exactly the last
// write at or below rev of each path. It returns how many writes were
// above rev.
func checkExportAt(t *testing.T, file string, rev uint64, seed map[string][]byte, writes []written) int {
	t.Helper()
	_, files := exportContents(t, file)
	for p, data := range seed {
		if !bytes.Equal(files["files"+p], data) {
			t.Fatalf("export: %s is %d bytes, want the %d seeded", p, len(files["files"+p]), len(data))
		}
	}
	want := map[string][]byte{}
	wantRev := map[string]uint64{}
	above := 0
	for _, w := range writes {
		if w.rev > rev {
			above++
		} else if w.rev > wantRev[w.path] {
			want[w.path], wantRev[w.path] = w.data, w.rev
		}
	}
	for name := range files {
		if p := strings.TrimPrefix(name, "files"); strings.HasPrefix(p, "/live/") {
			if _, ok := want[p]; !ok {
				t.Errorf("the export of revision %d holds %s, which no write at or below it made", rev, p)
			}
		}
	}
	for p, data := range want {
		if got := files["files"+p]; !bytes.Equal(got, data) {
			t.Errorf("the export of revision %d: %s = %q, want %q (revision %d)", rev, p, got, data, wantRev[p])
		}
	}
	return above
}

// exportJSON runs depotfs export with args and --json, and returns the
// revision it reports and how long it took.
func exportJSON(t *testing.T, args ...string) (uint64, time.Duration) {
	t.Helper()
	start := time.Now()
	out := runProgram(t, depotfsBin, append([]string{"export", "--json"}, args...)...)
	took := time.Since(start)
	var res struct {
		Revision uint64 `json:"revision"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Revision == 0 {
		t.Fatalf("export --json: %q: %v", out, err)
	}
	return res.Revision, took
}

// durationRE finds the duration in a call's log line.
var durationRE = regexp.MustCompile(`duration=\S+`)

// noExportSnapshot fails when a snapshot an export held is still listed.
func noExportSnapshot(t *testing.T, d *daemon) {
	t.Helper()
	env := d.mustCall("guide_snapshot", map[string]any{"action": "list"})
	list, _ := env.Data["snapshots"].([]any)
	for _, s := range list {
		if m, _ := s.(map[string]any); strings.HasPrefix(fmt.Sprint(m["name"]), "export-") {
			t.Errorf("the export left its snapshot: %v", m)
		}
	}
}

// TestExportLiveNATS: an export of a NATS depot of 500 files (1,500 with
// DEPOTFS_SOAK=1) while a host writes 10 files a second succeeds at its
// first and only attempt,
// and is the tree at the one revision it reports; so is an online backup
// of it through a host (the export inside the backup container), which
// backup verify accepts and restore explains how to load.
func TestExportLiveNATS(t *testing.T) {
	t.Parallel()
	h := startHosts(t, 1)
	d := h.all[0]
	dir := t.TempDir()
	files := bySoak(500, 1500)
	seed := writeSeedExport(t, filepath.Join(dir, "seed.tar"), files)
	natsArgs := []string{"--store", h.cluster.URL(), "--nats-prefix", h.prefix}
	runProgram(t, depotfsBin, append([]string{"import", filepath.Join(dir, "seed.tar")}, natsArgs...)...)

	stop := liveWriters(t, d, 1, 100*time.Millisecond)
	file := filepath.Join(dir, "e.tar")
	rev, took := exportJSON(t, append([]string{"--to", file}, natsArgs...)...)
	// An online backup of the same depot: the export at one revision in
	// the backup container, with the host's audit log.
	bak := filepath.Join(dir, "b.dfsbak")
	out := runProgram(t, depotfsBin, "backup", "--url", d.url, "--to", bak, "--json")
	var bres struct {
		Revision uint64 `json:"revision"`
	}
	if err := json.Unmarshal([]byte(out), &bres); err != nil || bres.Revision == 0 {
		t.Fatalf("backup --json of a NATS depot: %q: %v", out, err)
	}
	// Writes go on after both, so some are above their revisions.
	time.Sleep(time.Second)
	writes := stop()
	above := checkExportAt(t, file, rev, seed, writes)
	t.Logf("export of a live NATS depot (%d files, 10 writes/s): revision %d in %v, first attempt; %d writes in all, %d above its revision", files, rev, took.Round(time.Millisecond), len(writes), above)
	if above == 0 {
		t.Errorf("no write above the export's revision: the test proves nothing")
	}
	if out := runProgram(t, depotfsBin, "backup", "verify", bak); !strings.HasPrefix(out, "ok:") {
		t.Errorf("backup verify of the NATS backup: %s", out)
	}
	inner := filepath.Join(dir, "from-backup.tar")
	extracted, err := exec.Command("tar", "-xOf", bak, "export.tar").Output()
	if err != nil {
		t.Fatalf("tar -xOf %s export.tar: %v", bak, err)
	}
	if err := os.WriteFile(inner, extracted, 0o600); err != nil {
		t.Fatal(err)
	}
	checkExportAt(t, inner, bres.Revision, seed, writes)
	if msg := runFailing(t, depotfsBin, "restore", bak, "--db", filepath.Join(dir, "r", "depot.db")); !strings.Contains(msg, "depotfs import") {
		t.Errorf("restore of a NATS backup into --db: %s; want the way to import it", msg)
	}
	noExportSnapshot(t, d)
}

// TestExportRunningBolt: depotfs export --url of a running bolt depot
// while 8 writers write is the tree at the one revision it reports; its
// time is logged against cp of the database file.
func TestExportRunningBolt(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-calls", "0"}})
	big := seedBackupDepot(t, d)
	dir := t.TempDir()
	seed := writeSeedExport(t, filepath.Join(dir, "seed.tar"), 300)
	runProgram(t, depotfsBin, "import", filepath.Join(dir, "seed.tar"), "--url", d.url)
	for p, data := range big {
		seed[p] = data
	}
	stop := liveWriters(t, d, 8, 0)
	file := filepath.Join(dir, "e.tar")
	rev, took := exportJSON(t, "--url", d.url, "--to", file)
	start := time.Now()
	if out, err := exec.Command("cp", d.db, filepath.Join(dir, "copy.db")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	cpTook := time.Since(start)
	// cp leaves the copy in the page cache; the export is fsynced before
	// depotfs exits, so cp followed by a sync of the copy is its match.
	start = time.Now()
	if out, err := exec.Command("sh", "-c", `cp "$0" "$1" && sync "$1"`, d.db, filepath.Join(dir, "copy2.db")).CombinedOutput(); err != nil {
		t.Fatalf("cp && sync: %v %s", err, out)
	}
	cpSyncTook := time.Since(start)
	serverLine := d.waitLogLine("the export's call in the log", "tool=export", "outcome=ok")
	writes := stop()
	above := checkExportAt(t, file, rev, seed, writes)
	efi, _ := os.Stat(file)
	dfi, _ := os.Stat(d.db)
	mibps := func(size int64, d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }
	t.Logf("export --url of a running bolt depot under 8 writers: %.1f MiB in %v (%.1f MiB/s, fsynced; the server's side: %s); cp of its %.1f MiB database: %v (%.1f MiB/s), cp and sync: %v (%.1f MiB/s); export/cp throughput %.2fx, export/(cp and sync) %.2fx; %d writes, %d above revision %d",
		float64(efi.Size())/(1<<20), took.Round(time.Millisecond), mibps(efi.Size(), took), durationRE.FindString(serverLine),
		float64(dfi.Size())/(1<<20), cpTook.Round(time.Millisecond), mibps(dfi.Size(), cpTook), cpSyncTook.Round(time.Millisecond), mibps(dfi.Size(), cpSyncTook),
		mibps(efi.Size(), took)/mibps(dfi.Size(), cpTook), mibps(efi.Size(), took)/mibps(dfi.Size(), cpSyncTook), len(writes), above, rev)
	if above == 0 {
		t.Errorf("no write above the export's revision: the test proves nothing")
	}
	noExportSnapshot(t, d)
}
