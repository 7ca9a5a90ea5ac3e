// Command sealbench measures what sealing content at rest costs: the same
// work on a depot without a key and on one with a key, side by side in one
// run, and prints each figure with its ratio to the depot without a key.
// The work: ingest in MCP batches (guide_cache_files) and as a raw HTTP
// PUT of one large file, by depotfs push (which declares the file's
// sha256, so the server writes it once, under its address) and by a
// client that declares none, as curl -T does (the server stages the
// bytes and copies them under their hash once it is known; another
// file, so that nothing is deduplicated), a cold read through the mount
// (server restarted, database and blob files dropped from the page cache)
// and a warm one (dd again), and an offline backup. Below the table, the
// cipher's own throughput next to SHA-256's on this machine.
//
// The configurations: without a key, passthrough on (the default); with a
// key, passthrough off (the default when the blob cache is on disk); with
// a key and the blob cache on tmpfs, passthrough on; and, to isolate the
// cipher, without a key and passthrough off. Each figure is the best of
// -rounds, the configurations taking turns in every round so that the
// machine's load falls on all of them alike. It needs root (FUSE and tmpfs
// mounts); bench/seal.sh builds depotfs and runs it.
package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/sys/unix"

	"github.com/depotfs/depotfs/bench/internal/benchd"
	"github.com/depotfs/depotfs/internal/seal"
)

// config is one way to run the depot.
type config struct {
	name        string
	key         bool
	passthrough bool
	tmpfsCache  bool
}

var configs = []config{
	{"no key, passthrough on (default)", false, true, false},
	{"no key, passthrough off", false, false, false},
	{"key, passthrough off (default with a key)", true, false, false},
	{"key, blob cache on tmpfs, passthrough on", true, true, true},
}

// metrics are the figures of one configuration in one round.
type metrics struct {
	batch, put, putRaw, cold, warm, backup time.Duration
}

func main() {
	bin := flag.String("depotfs", "depotfs", "depotfs `binary` to run")
	bigMiB := flag.Int("big", 128, "size in MiB of the file pushed raw and read through the mount")
	batchFiles := flag.Int("batch-files", 400, "files sent in MCP batches of 50, 32 KiB each")
	rounds := flag.Int("rounds", 3, "rounds; each figure is the best of them")
	flag.Parse()
	log.SetFlags(0)
	if os.Geteuid() != 0 {
		log.Fatal("sealbench needs root (FUSE and tmpfs mounts)")
	}
	dir, err := os.MkdirTemp("", "sealbench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	keyFile := filepath.Join(dir, "depot.key")
	if err := os.WriteFile(keyFile, seal.NewKeyText(), 0o600); err != nil {
		log.Fatal(err)
	}
	big := make([]byte, *bigMiB<<20)
	rand.NewChaCha8([32]byte{3}).Read(big)
	bigFile, otherFile := filepath.Join(dir, "big.bin"), filepath.Join(dir, "other.bin")
	if err := os.WriteFile(bigFile, big, 0o644); err != nil {
		log.Fatal(err)
	}
	rand.NewChaCha8([32]byte{4}).Read(big)
	if err := os.WriteFile(otherFile, big, 0o644); err != nil {
		log.Fatal(err)
	}
	b := &bench{bin: *bin, dir: dir, keyFile: keyFile, bigFile: bigFile, otherFile: otherFile, bigMiB: *bigMiB, batchFiles: *batchFiles}
	fmt.Printf("sealbench: %d CPUs, load %s; %d rounds, best of each; ratio = time / time without a key, passthrough on (the default)\n\n", runtime.NumCPU(), load(), *rounds)
	best := make([]metrics, len(configs))
	for r := range *rounds {
		for i, c := range configs {
			m := b.run(c, r)
			best[i] = minOf(best[i], m, r == 0)
		}
	}
	base := best[0]
	fmt.Printf("| configuration | batch ingest, %d × 32 KiB | raw PUT, %d MiB, push | raw PUT, no sha256 | cold read | warm read | offline backup |\n|---|---|---|---|---|---|---|\n", *batchFiles, *bigMiB)
	for i, c := range configs {
		m := best[i]
		fmt.Printf("| %s | %s (%.2f×) | %s (%.2f×) | %s (%.2f×) | %s (%.2f×) | %s (%.2f×) | %s (%.2f×) |\n", c.name,
			secs(m.batch), ratio(m.batch, base.batch), secs(m.put), ratio(m.put, base.put),
			secs(m.putRaw), ratio(m.putRaw, base.putRaw),
			secs(m.cold), ratio(m.cold, base.cold), secs(m.warm), ratio(m.warm, base.warm),
			secs(m.backup), ratio(m.backup, base.backup))
	}
	fmt.Printf("\nload after the run: %s\n\n", load())
	ciphers()
}

// bench holds what every run shares.
type bench struct {
	bin, dir, keyFile, bigFile, otherFile string
	bigMiB, batchFiles                    int
}

// run measures configuration c once, in a fresh depot.
func (b *bench) run(c config, round int) metrics {
	root := filepath.Join(b.dir, fmt.Sprintf("r%d-%s", round, strconv.Itoa(int(time.Now().UnixNano()%1e6))))
	cache := filepath.Join(root, "blobs")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		log.Fatal(err)
	}
	if c.tmpfsCache {
		if err := syscall.Mount("tmpfs", cache, "tmpfs", 0, "size=1g"); err != nil {
			log.Fatalf("mount tmpfs: %v", err)
		}
		defer syscall.Unmount(cache, 0)
	}
	db := filepath.Join(root, "depot.db")
	mnt := filepath.Join(root, "mnt")
	args := []string{"--db", db, "--mount", mnt, "--passthrough=" + strconv.FormatBool(c.passthrough),
		"--blob-cache-dir", cache, "--max-store-size", "8GiB", "--max-file-size", "1GiB", "--blob-cache-size", "2GiB"}
	if c.key {
		args = append(args, "--key-file", b.keyFile)
	}
	var m metrics
	cmd, url := benchd.Serve(b.bin, args...)
	mcp := benchd.Connect(url, "sealbench")
	content := make([]byte, 32<<10)
	m.batch = benchd.Timed(func() {
		for i := 0; i < b.batchFiles; i += 50 {
			var files []any
			for j := i; j < min(i+50, b.batchFiles); j++ {
				rand.NewChaCha8([32]byte{byte(j), byte(j >> 8)}).Read(content)
				files = append(files, map[string]any{"path": fmt.Sprintf("/batch/%05d.bin", j),
					"content": base64.StdEncoding.EncodeToString(content), "encoding": "base64"})
			}
			benchd.Call(mcp, "guide_cache_files", map[string]any{"files": files})
		}
	})
	m.put = run(b.bin, "push", "--url", url, "--to", "/raw", b.bigFile)
	stop(cmd)
	// Cold: a new server (no opened chunks in memory, no kernel cache of
	// the mount) over files dropped from the page cache.
	drop(db)
	filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			drop(p)
		}
		return nil
	})
	cmd, url = benchd.Serve(b.bin, args...)
	path := filepath.Join(mnt, "raw", "big.bin")
	dd := func() time.Duration { return run("dd", "if="+path, "of=/dev/null", "bs=1M", "status=none") }
	m.cold = dd()
	// A warm read of 128 MiB takes tens of milliseconds, which one
	// scheduling delay on a loaded machine doubles: the best of three.
	m.warm = min(dd(), dd(), dd())
	// After the reads: a PUT's blob is copied into a passthrough cache
	// in the background, which must neither slow the push's PUT nor fill
	// the blob the cold read is to fill.
	m.putRaw = benchd.Timed(func() { putUndeclared(benchd.Connect(url, "sealbench"), "/undeclared/other.bin", b.otherFile) })
	stop(cmd)
	m.backup = run(b.bin, "backup", "--db", db, "--to", filepath.Join(root, "b.dfsbak"))
	os.RemoveAll(root)
	return m
}

// ciphers prints the throughput of SHA-256 and of both AEADs on 1 MiB.
func ciphers() {
	chunk := make([]byte, 1<<20)
	aeadRate := func(a cipher.AEAD) testing.BenchmarkResult {
		nonce := make([]byte, a.NonceSize())
		out := make([]byte, 0, len(chunk)+a.Overhead())
		return testing.Benchmark(func(tb *testing.B) {
			tb.SetBytes(int64(len(chunk)))
			for tb.Loop() {
				a.Seal(out[:0], nonce, chunk, nil)
			}
		})
	}
	sha := testing.Benchmark(func(tb *testing.B) {
		tb.SetBytes(int64(len(chunk)))
		for tb.Loop() {
			sha256.Sum256(chunk)
		}
	})
	blk, _ := aes.NewCipher(make([]byte, 32))
	gcm, _ := cipher.NewGCM(blk)
	x, _ := chacha20poly1305.NewX(make([]byte, 32))
	mbs := func(r testing.BenchmarkResult) float64 {
		return float64(r.Bytes) * float64(r.N) / r.T.Seconds() / 1e6
	}
	fmt.Printf("| on 1 MiB, one core | MB/s | × SHA-256 |\n|---|---|---|\n")
	for _, row := range []struct {
		name string
		r    testing.BenchmarkResult
	}{{"SHA-256 (every stored byte, with or without a key)", sha}, {"XChaCha20-Poly1305 (sealing)", aeadRate(x)}, {"AES-256-GCM (not chosen)", aeadRate(gcm)}} {
		fmt.Printf("| %s | %.0f | %.2f× |\n", row.name, mbs(row.r), mbs(row.r)/mbs(sha))
	}
}

// putUndeclared sends file to path as a client that knows no hash does:
// guide_begin_upload with the size alone, then one PUT of the bytes.
func putUndeclared(c *client.Client, path, file string) {
	f, err := os.Open(file)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		log.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "guide_begin_upload"
	req.Params.Arguments = map[string]any{"path": path, "size": st.Size()}
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		log.Fatalf("guide_begin_upload: %v %+v", err, res)
	}
	var begun struct {
		Data struct {
			UploadURL string `json:"upload_url"`
		} `json:"data"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &begun); err != nil || begun.Data.UploadURL == "" {
		log.Fatalf("guide_begin_upload: no upload_url in %s (%v)", raw, err)
	}
	put, err := http.NewRequest(http.MethodPut, begun.Data.UploadURL, f)
	if err != nil {
		log.Fatal(err)
	}
	put.ContentLength = st.Size()
	resp, err := http.DefaultClient.Do(put)
	if err != nil {
		log.Fatalf("PUT: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		log.Fatalf("PUT: HTTP %d: %s", resp.StatusCode, body)
	}
}

// stop stops a server and waits for it (it unmounts on SIGTERM).
func stop(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

// drop drops a file from the page cache.
func drop(p string) {
	f, err := os.Open(p)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	f.Sync()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		log.Fatalf("fadvise %s: %v", p, err)
	}
}

// run runs a program and returns how long it took.
func run(name string, args ...string) time.Duration {
	return benchd.Timed(func() {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			log.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	})
}

// minOf keeps the smaller of each figure; first takes m as it is.
func minOf(a, m metrics, first bool) metrics {
	if first {
		return m
	}
	return metrics{min(a.batch, m.batch), min(a.put, m.put), min(a.putRaw, m.putRaw), min(a.cold, m.cold), min(a.warm, m.warm), min(a.backup, m.backup)}
}

func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil || len(b) < 14 {
		return "?"
	}
	return string(b[:14])
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }
func secs(d time.Duration) string      { return fmt.Sprintf("%.3f s", d.Seconds()) }
