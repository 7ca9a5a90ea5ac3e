package integration_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/mark3labs/mcp-go/mcp"
	bbolt "go.etcd.io/bbolt"
)

// sealMarker is plaintext the sealing tests look for on disk.
const sealMarker = "SEALED-AT-REST-MARKER-41c7"

// writeKeyFile makes a key-encryption key with depotfs key new.
func writeKeyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "depot.key")
	if code, out, errOut := runDepotfs(t, "key", "new", "--out", path); code != 0 || !strings.Contains(out, "wrote key kek-") {
		t.Fatalf("key new: exit %d\n%s%s", code, out, errOut)
	}
	return path
}

// countIn counts sealMarker in the file at path, or in every file under it
// when it is a directory.
func countIn(t *testing.T, path string) int {
	t.Helper()
	return countAll(t, path, []byte(sealMarker))
}

// countAll counts the occurrences of each of needles in the file at path,
// or in every file below it.
func countAll(t *testing.T, path string, needles ...[]byte) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		for _, x := range needles {
			n += bytes.Count(b, x)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSealedAtRest pushes marked content through the tools (one file in a
// call, one in chunks, large enough for passthrough, and one in a raw PUT
// of several staging chunks by depotfs push), reads it back
// through the mount, and counts the marker in the database, the blob cache
// and an offline backup: none with a key, some without (the control). The
// sealed depot refuses to start without its key, naming it.
func TestSealedAtRest(t *testing.T) {
	t.Parallel()
	key := writeKeyFile(t)
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "clear", true: "sealed"}[sealed], func(t *testing.T) {
			t.Parallel()
			var args []string
			if sealed {
				args = []string{"--key-file", key}
			}
			// The database and the blob cache beside it on a disk: on
			// tmpfs, a sealed depot keeps passthrough, whose plaintext
			// copies stay in memory.
			db := filepath.Join(diskTempDir(t), "depot.db")
			d := startDaemon(t, daemonConfig{transport: overHTTP, db: db, args: args})
			small := sealMarker + " a small report\n"
			big := bytes.Repeat([]byte(sealMarker+" a large one\n"), 40000) // ≈ 1.3 MiB: passthrough size
			d.mustCall("guide_cache_file", map[string]any{"path": "/small.txt", "content": small})
			pushChunked(d, "/big.txt", big, 512<<10, "big", -1)
			raw := bytes.Repeat([]byte(sealMarker+" sent raw\n"), 100000) // ≈ 3 MiB: several chunks
			src := filepath.Join(t.TempDir(), "raw.txt")
			if err := os.WriteFile(src, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			if code, out, errOut := runDepotfs(t, "push", "--url", d.url, "--to", "/", src); code != 0 {
				t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
			}
			for p, want := range map[string][]byte{"/small.txt": []byte(small), "/big.txt": big, "/raw.txt": raw} {
				for range 2 { // cold, then from the blob cache or the page cache
					if got, err := os.ReadFile(d.path(p)); err != nil || !bytes.Equal(got, want) {
						t.Fatalf("%s through the mount: %d bytes, %v; want %d", p, len(got), err, len(want))
					}
				}
			}
			if sealed && !strings.Contains(d.logs.String(), "passthrough off: the depot is sealed") {
				t.Error("a sealed depot with its blob cache on disk did not turn passthrough off")
			}
			d.stop()
			bak := filepath.Join(t.TempDir(), "b.dfsbak")
			if code, out, errOut := runDepotfs(t, "backup", "--db", d.db, "--to", bak); code != 0 {
				t.Fatalf("offline backup: exit %d\n%s%s", code, out, errOut)
			}
			blobs := filepath.Join(filepath.Dir(d.db), "blobs")
			// In the database, the plain SHA-256 of each file too, in hex
			// and raw: a sealed depot names content by keyed addresses. (Not
			// in the backup: it holds the audit log, which names the hashes
			// of the files written, in the clear.)
			var sums [][]byte
			for _, c := range [][]byte{[]byte(small), big, raw} {
				sum := sha256.Sum256(c)
				sums = append(sums, sum[:], []byte(hex.EncodeToString(sum[:])))
			}
			counts := map[string]int{"database": countIn(t, d.db), "backup": countIn(t, bak),
				"database, plain hashes": countAll(t, d.db, sums...)}
			if _, err := os.Stat(blobs); err == nil {
				counts["blob cache"] = countIn(t, blobs)
			} else if !sealed {
				t.Logf("no blob cache without a key (passthrough unavailable here): its control is not checked")
			}
			for where, n := range counts {
				if sealed && n != 0 {
					t.Errorf("the %s of a sealed depot holds the plaintext %d times", where, n)
				}
				if !sealed && n == 0 {
					t.Errorf("the %s of a depot without a key does not hold its plaintext: the test looks in the wrong place", where)
				}
			}
			t.Logf("marker counts: %v", counts)
			if !sealed {
				return
			}
			code, out, errOut := runDepotfs(t, "serve", "--db", d.db, "--mount", filepath.Join(t.TempDir(), "m"), "--listen", "127.0.0.1:0")
			if code == 0 || !strings.Contains(errOut, "sealed") || !strings.Contains(errOut, "kek-") || !strings.Contains(errOut, "--key-file") {
				t.Fatalf("serve of a sealed depot without its key: exit %d\n%s%s", code, out, errOut)
			}
			other := writeKeyFile(t)
			code, _, errOut = runDepotfs(t, "serve", "--db", d.db, "--mount", filepath.Join(t.TempDir(), "m"), "--listen", "127.0.0.1:0", "--key-file", other)
			if code == 0 || !strings.Contains(errOut, "wrong key") {
				t.Fatalf("serve of a sealed depot with another key: exit %d\n%s", code, errOut)
			}
			if code, out, errOut := runDepotfs(t, "backup", "verify", bak); code != 0 || !strings.Contains(out, "sealed content not read") {
				t.Errorf("backup verify without the key: exit %d\n%s%s", code, out, errOut)
			}
			if code, out, errOut := runDepotfs(t, "backup", "verify", bak, "--key-file", key); code != 0 || !strings.Contains(out, "3 file(s) whose content matches") {
				t.Errorf("backup verify with the key: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// TestSealedTamperedChunk flips one byte of a sealed chunk on disk: the
// file then reads as EIO through the mount and, through the read tools of
// both contracts, as an integrity error that names the file, says a retry
// will not help and sends the operator to a backup; a file left alone
// still reads.
func TestSealedTamperedChunk(t *testing.T) {
	t.Parallel()
	key := writeKeyFile(t)
	args := []string{"--key-file", key, "--tools", "guide,fs,provider"}
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: args})
	d.mustCall("guide_cache_file", map[string]any{"path": "/t/victim.txt", "content": sealMarker + " victim\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/t/bystander.txt", "content": "left alone\n"})
	d.stop()

	db, err := bbolt.Open(d.db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Chunks are stored under keyed addresses: the victim's is the one of
	// its sealed size.
	want := len(sealMarker+" victim\n") + seal.Overhead
	err = db.Update(func(tx *bbolt.Tx) error {
		chunks := tx.Bucket([]byte("chunks"))
		var k, v []byte
		err := chunks.ForEach(func(ck, cv []byte) error {
			if len(cv) == want {
				k, v = bytes.Clone(ck), bytes.Clone(cv)
			}
			return nil
		})
		if err != nil || v == nil {
			return cmp.Or(err, errors.New("the victim's chunk is not where the test expects it"))
		}
		v[len(v)-5] ^= 0x20
		return chunks.Put(k, v)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	d2 := startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount, args: append(args, "--metrics-listen", "127.0.0.1:0", "--nfs", "127.0.0.1:0")})
	for range 2 {
		if got, err := os.ReadFile(d2.path("/t/victim.txt")); !errors.Is(err, syscall.EIO) || len(got) != 0 {
			t.Errorf("tampered file through the mount: %q, %v; want EIO", got, err)
		}
	}
	if got, err := os.ReadFile(d2.path("/t/bystander.txt")); err != nil || string(got) != "left alone\n" {
		t.Errorf("untouched file through the mount: %q, %v", got, err)
	}
	says := func(msg string) bool {
		return strings.Contains(msg, "victim.txt") && strings.Contains(msg, "failed its integrity check") &&
			strings.Contains(msg, "retrying will not help") && strings.Contains(msg, "backup") &&
			!strings.Contains(msg, "internal")
	}
	fc := fsClient{d2.client}
	var out struct{ Content string }
	err = fc.call("read", map[string]any{"path": "t/victim.txt"}, &out)
	if fe, ok := errors.AsType[*fsError](err); !ok || fe.Code != "integrity_error" || !says(fe.Message) || fe.Details.Path != "t/victim.txt" || out.Content != "" {
		t.Errorf("tampered file through fs read: %q, %v; want integrity_error naming the file, no retry, a backup", out.Content, err)
	}
	pc := providerClient{d2.client}
	text, err := pc.ReadFile("/t/victim.txt", "utf-8", 0)
	if pe, ok := errors.AsType[*providerError](err); !ok || pe.Type != "FileProviderError" || !says(pe.Message) || text != "" {
		t.Errorf("tampered file through read_file: %q, %v; want FileProviderError naming the file, no retry, a backup", text, err)
	} else {
		t.Logf("read_file: %v", err)
	}
	tamperedDoors(t, d2, says)
	// Eight reads or more (the kernel may retry), one chunk: counted each
	// time, logged once.
	if n := strings.Count(d2.logs.String(), `msg="sealed content failed authentication`); n != 1 {
		t.Errorf("the daemon logged the damaged chunk %d times; want once:\n%s", n, tail(d2.logs.String(), 20))
	}
	side := metricsRE.FindStringSubmatch(d2.logs.String())
	if side == nil {
		t.Fatalf("no metrics address in the log:\n%s", d2.logs)
	}
	_, fams := scrape(t, side[1]+"/metrics", "")
	if n := value(t, fams, "depotfs_store_tampered_chunks_total"); n < 8 {
		t.Errorf("depotfs_store_tampered_chunks_total = %v after eight failed reads; want 8 or more", n)
	}
}

// tamperedDoors reads /t/victim.txt, whose chunk is damaged, through the
// doors beside the mount and the tools: a WebDAV GET and a resource link
// GET answer 500 with the tools' words (says), resources/read a JSON-RPC
// internal error with them, NFS an I/O error; /t/bystander.txt still reads
// through each.
func tamperedDoors(t *testing.T, d *daemon, says func(string) bool) {
	t.Helper()
	for _, p := range []string{"t/victim.txt", "t/bystander.txt"} {
		r := curl(t, "", d.base()+"/dav/"+p)
		if p == "t/bystander.txt" {
			if r.status != 200 || string(r.body) != "left alone\n" {
				t.Errorf("WebDAV GET of the untouched file: %d %q", r.status, r.body)
			}
			continue
		}
		if r.status != 500 || !says(string(r.body)) || strings.Contains(string(r.body), sealMarker) {
			t.Errorf("WebDAV GET of the tampered file: %d %q; want 500 with an integrity error", r.status, r.body)
		}
	}
	var info struct{ Link string }
	if err := (fsClient{d.client}).call("info", map[string]any{"path": "t/victim.txt"}, &info); err != nil || info.Link == "" {
		t.Fatalf("fs info of the tampered file: %+v, %v; want its link", info, err)
	}
	if r := curl(t, "", info.Link); r.status != 500 || !says(string(r.body)) {
		t.Errorf("link GET of the tampered file: %d %q; want 500 with an integrity error", r.status, r.body)
	}
	req := mcp.ReadResourceRequest{}
	req.Params.URI = resourceURI("/t/victim.txt")
	res, err := d.client.ReadResource(context.Background(), req)
	if !errors.Is(err, mcp.ErrInternalError) || !says(strings.TrimPrefix(err.Error(), "internal error: ")) {
		t.Errorf("resources/read of the tampered file: %+v, %v; want an internal error with the integrity text", res, err)
	}
	// NFSv3 has one status for this, NFS3ERR_IO (5), and no words.
	c := dialNFS(t, d)
	if status, got := c.read(t, c.handle(t, "t/bystander.txt")); status != 0 || got != "left alone\n" {
		t.Errorf("NFS READ of the untouched file: status %d, %q", status, got)
	}
	if status, got := c.read(t, c.handle(t, "t/victim.txt")); status != 5 || got != "" {
		t.Errorf("NFS READ of the tampered file: status %d, %q; want NFS3ERR_IO (5)", status, got)
	}
}

// TestSealExistingDepot seals a depot written without a key with depotfs
// seal: afterwards the database holds no plaintext, serve needs the key,
// and every file reads through the mount as it was.
func TestSealExistingDepot(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	want := map[string][]byte{
		"/a.txt":   []byte(sealMarker + " a\n"),
		"/big.bin": bytes.Repeat([]byte(sealMarker+" big\n"), 100000),
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/a.txt", "content": string(want["/a.txt"])})
	pushChunked(d, "/big.bin", want["/big.bin"], 1<<20, "big", -1)
	d.stop()
	if countIn(t, d.db) == 0 {
		t.Fatal("the clear depot does not hold its plaintext: the test looks in the wrong place")
	}
	key := writeKeyFile(t)
	code, out, errOut := runDepotfs(t, "seal", "--db", d.db)
	if code != 2 || !strings.Contains(errOut, "--key-file") {
		t.Errorf("seal without a key: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runDepotfs(t, "seal", "--db", d.db, "--key-file", key); code != 0 || !strings.Contains(out, "sealed "+d.db) {
		t.Fatalf("seal: exit %d\n%s%s", code, out, errOut)
	}
	if n := countIn(t, d.db); n != 0 {
		t.Fatalf("the sealed database holds the plaintext %d times", n)
	}
	code, _, errOut = runDepotfs(t, "serve", "--db", d.db, "--mount", filepath.Join(t.TempDir(), "m"), "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(errOut, "sealed") {
		t.Fatalf("serve of the sealed depot without its key: exit %d\n%s", code, errOut)
	}
	d2 := startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount, args: []string{"--key-file", key}})
	for p, w := range want {
		if got, err := os.ReadFile(d2.path(p)); err != nil || !bytes.Equal(got, w) {
			t.Errorf("%s after sealing: %d bytes, %v; want %d", p, len(got), err, len(w))
		}
	}
}

// TestSealKilledResumed kills depotfs seal with SIGKILL right after its
// first transaction (32 MiB of a 64 MiB depot) and runs it again: the
// half-sealed depot is refused by serve meanwhile, the second run
// finishes, and every file reads back identical through the mount with
// the key, the database holding no plaintext.
func TestSealKilledResumed(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-file-size", "128MiB", "--max-store-size", "1GiB"}})
	src := filepath.Join(t.TempDir(), "in")
	big := bytes.Repeat([]byte(sealMarker+" a line of a large file\n"), (64<<20)/50)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runDepotfs(t, "push", "--url", d.url, "--to", "/", filepath.Join(src, "big.bin")); code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	small := sealMarker + " small\n"
	d.mustCall("guide_cache_file", map[string]any{"path": "/small.txt", "content": small})
	d.stop()
	key := writeKeyFile(t)

	cmd := exec.Command(depotfsBin, "seal", "--db", d.db, "--key-file", key)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var first string
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "sealed ") {
			first = sc.Text()
			cmd.Process.Kill()
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	cmd.Wait()
	var done, total int
	if _, err := fmt.Sscanf(first, "sealed %d of %d chunks", &done, &total); err != nil || done == 0 || done >= total {
		t.Fatalf("first progress line %q: want part of the chunks", first)
	}
	code, _, errOut := runDepotfs(t, "serve", "--db", d.db, "--mount", filepath.Join(t.TempDir(), "m"), "--listen", "127.0.0.1:0", "--key-file", key)
	if code == 0 || !strings.Contains(errOut, "sealing of this depot was interrupted") {
		t.Fatalf("serve of the half-sealed depot (killed after %q): exit %d, want a refusal\n%s", first, code, tail(errOut, 5))
	}
	if code, out, errOut := runDepotfs(t, "seal", "--db", d.db, "--key-file", key); code != 0 || !strings.Contains(out, "sealed "+d.db) || strings.Contains(errOut, fmt.Sprintf("sealed %d of", done)) {
		t.Fatalf("seal run again (the first stopped at %q): exit %d\n%s%s", first, code, out, errOut)
	}
	if n := countIn(t, d.db); n != 0 {
		t.Fatalf("the sealed database holds the plaintext %d times", n)
	}
	d2 := startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount, args: []string{"--key-file", key}})
	for p, want := range map[string][]byte{"/big.bin": big, "/small.txt": []byte(small)} {
		if got, err := os.ReadFile(d2.path(p)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s after the resumed seal: %d bytes, %v; want %d identical", p, len(got), err, len(want))
		}
	}
}
