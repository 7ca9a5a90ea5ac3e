package integration_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// backupSeedFiles and backupSeedSize make the depot a backup test copies:
// 8 x 4 MiB = 32 MiB of incompressible content (128 MiB in a soak). What
// these tests prove (one revision's state exactly, writers served
// throughout, a cut-off file refused) does not depend on the size, and
// 32 MiB keeps the copy long enough to overlap the writers and to kill the
// client past its first 4 MiB, within the machine's time. bench/backup
// measures throughput at 1 GiB and more.
var backupSeedFiles = bySoak(8, 16)

var backupSeedSize = bySoak(4<<20, 8<<20)

// seedBackupDepot pushes the seed files through raw PUTs and returns
// their contents by path.
func seedBackupDepot(t *testing.T, d *daemon) map[string][]byte {
	t.Helper()
	seed := map[string][]byte{}
	for i := range backupSeedFiles {
		p := fmt.Sprintf("/seed/f%02d.bin", i)
		data := pseudoRandom(backupSeedSize, uint64(100+i))
		u := beginUpload(t, d, map[string]any{"path": p, "size": len(data)})
		if r := put(t, u, bytes.NewReader(data), int64(len(data)), ""); r.Status != 200 {
			t.Fatalf("seed %s: %d %+v", p, r.Status, r.Env.Error)
		}
		seed[p] = data
	}
	return seed
}

// written is one write a load writer saw acknowledged.
type written struct {
	path string
	data []byte
	rev  uint64
}

// TestBackupUnderLoad: 8 writers keep writing while depotfs backup copies
// a running depot; every writer call succeeds throughout; the backup
// verifies; the restored depot holds exactly the state of the backup's
// revision R (every write at or below R byte-identical, none above),
// passes audit verify, and its next write gets a revision above R. A
// second restore into the same database is refused without --force.
func TestBackupUnderLoad(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-calls", "0"}})
	seed := seedBackupDepot(t, d)

	var stop atomic.Bool
	var mu sync.Mutex
	var writes []written
	var during atomic.Int64 // writes acknowledged while the backup ran
	var backingUp atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop.Store(true)
	for w := range 8 {
		c := d.connect(clientAuth{}).mcp
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				p := fmt.Sprintf("/load/w%d/f%d.txt", w, n%20)
				data := []byte(fmt.Sprintf("writer %d write %d\n", w, n))
				env, err := callWith(c, "guide_cache_file", map[string]any{"path": p, "content": string(data)})
				if err != nil || !env.Success {
					t.Errorf("writer %d: %v %+v", w, err, env.Error)
					return
				}
				if backingUp.Load() {
					during.Add(1)
				}
				mu.Lock()
				writes = append(writes, written{p, data, uint64(env.Data["revision"].(float64))})
				mu.Unlock()
			}
		})
	}
	waitFor(t, 30*time.Second, "writers to start", func() bool { mu.Lock(); defer mu.Unlock(); return len(writes) > 50 })

	file := filepath.Join(t.TempDir(), "depot.dfsbak")
	backingUp.Store(true)
	out := runProgram(t, depotfsBin, "backup", "--url", d.url, "--to", file, "--json")
	backingUp.Store(false)
	var res struct {
		Revision uint64 `json:"revision"`
		Bytes    int64  `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Revision == 0 {
		t.Fatalf("backup --json: %q: %v", out, err)
	}
	// The writers go on after the backup, so writes above R exist.
	mu.Lock()
	extra := len(writes)
	mu.Unlock()
	waitFor(t, 30*time.Second, "writes after the backup", func() bool { mu.Lock(); defer mu.Unlock(); return len(writes) > extra+50 })
	stop.Store(true)
	wg.Wait()
	if during.Load() == 0 {
		t.Errorf("no write was acknowledged while the backup ran")
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup file: %v, mode %v; want 0600 (it holds the audit key)", err, fi.Mode())
	}
	t.Logf("backup of revision %d: %d bytes; %d writes acknowledged during it, %d in all", res.Revision, res.Bytes, during.Load(), len(writes))

	if out := runProgram(t, depotfsBin, "backup", "verify", file); !strings.HasPrefix(out, "ok:") {
		t.Fatalf("backup verify: %s", out)
	}
	db := filepath.Join(t.TempDir(), "restored", "depot.db")
	runProgram(t, depotfsBin, "restore", file, "--db", db)
	if msg := runFailing(t, depotfsBin, "restore", file, "--db", db); !strings.Contains(msg, "not empty") {
		t.Errorf("a second restore into the same database: %s", msg)
	}
	if out := runProgram(t, depotfsBin, "audit", "verify", "--db", db); !strings.HasPrefix(out, "ok:") {
		t.Errorf("audit verify of the restored log: %s", out)
	}

	r := startDaemon(t, daemonConfig{transport: overHTTP, db: db})
	for p, data := range seed {
		if got, err := os.ReadFile(r.path(p)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("restored %s: %d bytes, %v; want the %d seeded", p, len(got), err, len(data))
		}
	}
	// The state at R: for each path, the last write at or below R.
	want := map[string][]byte{}
	wantRev := map[string]uint64{}
	above := 0
	for _, w := range writes {
		if w.rev <= res.Revision {
			if w.rev > wantRev[w.path] {
				want[w.path], wantRev[w.path] = w.data, w.rev
			}
		} else {
			above++
		}
	}
	if above == 0 {
		t.Fatalf("no write above the backup's revision %d: the test proves nothing", res.Revision)
	}
	filepath.WalkDir(r.path("/load"), func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		dp := strings.TrimPrefix(p, r.mount)
		if _, ok := want[dp]; !ok {
			t.Errorf("restored %s, which no write at or below revision %d created", dp, res.Revision)
		}
		return nil
	})
	for p, data := range want {
		if got, err := os.ReadFile(r.path(p)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("restored %s = %q, %v; want %q (revision %d, backup at %d)", p, got, err, data, wantRev[p], res.Revision)
		}
	}
	next := r.mustCall("guide_cache_file", map[string]any{"path": "/after-restore.txt", "content": "x"})
	if rev := uint64(next.Data["revision"].(float64)); rev <= res.Revision {
		t.Errorf("first write after the restore got revision %d, not above the backup's %d", rev, res.Revision)
	}
	if msg := runFailing(t, depotfsBin, "restore", file, "--db", db, "--force"); !strings.Contains(msg, "stop the server first") {
		t.Errorf("restore --force over a running server's database: %s", msg)
	}
	if got, err := os.ReadFile(r.path("/after-restore.txt")); err != nil || string(got) != "x" {
		t.Errorf("after the refused restore the server shows %q, %v", got, err)
	}
}

// TestBackupKilledHalfway: kill -9 of the backup client halfway through
// leaves the server serving, and the partial file is refused by backup
// verify and by restore, which creates nothing.
func TestBackupKilledHalfway(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	seedBackupDepot(t, d)
	file := filepath.Join(t.TempDir(), "partial.dfsbak")
	cmd := exec.Command(depotfsBin, "backup", "--url", d.url, "--to", file, "--json")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if fi, err := os.Stat(file); err == nil && fi.Size() > 4<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the backup wrote nothing within 30s")
		}
		time.Sleep(100 * time.Microsecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if err := <-done; err == nil {
		t.Fatal("the backup finished before it was killed: make the depot larger")
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatalf("the partial file: %v", err)
	}
	t.Logf("killed the backup client at %d bytes", fi.Size())

	d.mustCall("guide_cache_file", map[string]any{"path": "/after-kill.txt", "content": "still serving"})
	if got, _ := os.ReadFile(d.path("/after-kill.txt")); string(got) != "still serving" {
		t.Errorf("after the kill the mount shows %q", got)
	}
	if msg := runFailing(t, depotfsBin, "backup", "verify", file); !strings.Contains(msg, "not a complete depotfs backup") {
		t.Errorf("backup verify of the partial file: %s", msg)
	}
	db := filepath.Join(t.TempDir(), "r", "depot.db")
	if msg := runFailing(t, depotfsBin, "restore", file, "--db", db); !strings.Contains(msg, "not a complete depotfs backup") {
		t.Errorf("restore of the partial file: %s", msg)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("restore of the partial file left %s: %v", db, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(db), "audit.log")); !os.IsNotExist(err) {
		t.Errorf("restore of the partial file left an audit log: %v", err)
	}
}
