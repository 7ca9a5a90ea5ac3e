package integration_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// putAsync starts a PUT of size bytes (-1: chunked) whose body the test
// writes to the returned pipe; the reply arrives on the channel.
func putAsync(t testing.TB, rawURL string, size int64) (*io.PipeWriter, <-chan putReply) {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPut, rawURL, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	done := make(chan putReply, 1)
	go func() {
		var r putReply
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			pr.CloseWithError(err)
			done <- putReply{Status: -1}
			return
		}
		defer resp.Body.Close()
		r.Status = resp.StatusCode
		raw, _ := io.ReadAll(resp.Body)
		json.Unmarshal(raw, &r.Env)
		done <- r
	}()
	t.Cleanup(func() { pw.CloseWithError(io.ErrClosedPipe) })
	return pw, done
}

// TestRateChargesWhatArrives: --rate-bytes charges what a PUT brings, not
// what it declares: an archive what it unpacks to (it passes from a full
// bucket and leaves the excess as debt, which the retry_after of the next
// PUT shows), and a body without Content-Length as it is read. The
// refused ones get 429 and store nothing.
func TestRateChargesWhatArrives(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-local", "--rate-bytes", "64KiB", "--rate-byte-burst", "16MiB"}})

	// 36 MiB unpacked from about 40 KB sent: charged 36 MiB, 20 MiB of it
	// as debt, 320 s at 64 KiB/s.
	var tgz bytes.Buffer
	tarStream(t, &tgz, true, 9, 4<<20)
	u := beginUpload(t, d, map[string]any{"path": "/unpacked", "format": "tar.gz"})
	if r := put(t, u, bytes.NewReader(tgz.Bytes()), int64(tgz.Len()), ""); r.Status != http.StatusOK {
		t.Fatalf("archive of %d bytes unpacking to 36 MiB from a full bucket: %d %+v, want 200", tgz.Len(), r.Status, r.Env.Error)
	}
	before := snapshot(t, d.mount)
	u = beginUpload(t, d, map[string]any{"path": "/one.bin"})
	if r := put(t, u, strings.NewReader("x"), 1, ""); r.Status != http.StatusTooManyRequests || r.Env.Error == nil || r.Env.Error.RetryAfter < 120 {
		t.Errorf("1 byte after the archive: %d %+v, want 429 with a retry_after of minutes (up to 320 s: the archive charged what it unpacked to, not the 40 KB sent)", r.Status, r.Env.Error)
	}

	// 20 MiB sent chunked: charged as it arrives, refused once the burst
	// is spent.
	u = beginUpload(t, d, map[string]any{"path": "/chunked.bin"})
	pw, done := putAsync(t, u, -1)
	go func() {
		chunk := make([]byte, 1<<20)
		for range 20 {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	if r := <-done; r.Status != http.StatusTooManyRequests || r.Env.Error == nil || r.Env.Error.Type != "rate_limited" {
		t.Errorf("20 MiB chunked: %d %+v, want 429", r.Status, r.Env.Error)
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused uploads changed the mount:\n%s", diff)
	}
}

// TestStreamsInFlightCountAgainstStore: the bytes of a raw upload being
// received count against --max-store-size with the chunks of uploads in
// progress: while a 40 MiB PUT streams into a 64 MiB store, another
// 40 MiB PUT is refused (413) instead of both being staged; the first
// completes.
func TestStreamsInFlightCountAgainstStore(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-store-size", "64MiB", "--max-file-size", "48MiB"}})
	const size = 40 << 20
	first := beginUpload(t, d, map[string]any{"path": "/first.bin"})
	second := beginUpload(t, d, map[string]any{"path": "/second.bin"})
	// The body is made before the PUT starts: made after, on a loaded
	// machine, it kept the body idle past --http-body-idle-timeout and the
	// server rightly cut it.
	data := pseudoRandom(size, 7)
	pw, done := putAsync(t, first, size)
	// Socket buffers take a few MiB; once 20 MiB are written the server
	// is reading the body, so it has counted the upload.
	if _, err := pw.Write(data[:20<<20]); err != nil {
		t.Fatal(err)
	}
	if got := storeStats(t, d)["receiving_bytes"]; got != float64(size) {
		t.Errorf("guide_cache_stats receiving_bytes while the first streams: %v, want %d", got, size)
	}
	r := put(t, second, bytes.NewReader(data), size, "")
	if r.Status != http.StatusRequestEntityTooLarge || r.Env.Error == nil || !strings.Contains(r.Env.Error.Message, "being received") {
		t.Errorf("a second 40 MiB PUT while the first streams: %d %+v, want 413 naming the uploads in flight", r.Status, r.Env.Error)
	}
	if _, err := pw.Write(data[20<<20:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if r := <-done; !r.Env.Success {
		t.Fatalf("the first PUT: %d %+v", r.Status, r.Env.Error)
	}
	if got, err := os.ReadFile(d.path("/first.bin")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("/first.bin: %d bytes, %v", len(got), err)
	}
	if _, err := os.Stat(d.path("/second.bin")); err == nil {
		t.Error("the refused PUT stored its file")
	}
}

// TestHugeMemberNameClipped: a member name of 900 KB reaches neither the
// reply nor the server's log whole.
func TestHugeMemberNameClipped(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	name := strings.Repeat("n", 900_000)
	tgz := makeTarGz(t, []tarEntry{{name: "ok.txt", typ: tar.TypeReg, data: []byte("ok")}, {name: name, typ: tar.TypeReg, data: []byte("x")}})
	u := beginUpload(t, d, map[string]any{"path": "/long", "format": "tar.gz"})
	r := put(t, u, bytes.NewReader(tgz), int64(len(tgz)), "")
	if r.Env.Success || len(r.Env.Error.Message) > 4096 {
		t.Fatalf("PUT with a 900 KB member name: %d, message of %d bytes", r.Status, len(r.Env.Error.Message))
	}
	d.waitLogLine("the PUT's log line", "guide_begin_upload", "outcome=")
	for _, line := range strings.Split(d.logs.String(), "\n") {
		if len(line) > 16<<10 {
			t.Errorf("a log line of %d bytes: %.200s…", len(line), line)
		}
	}
	if _, err := os.Stat(d.path("/long/ok.txt")); err == nil {
		t.Error("the refused archive stored a file")
	}
}

// TestKilledUploadLeavesNothing: an archive upload is spooled under the
// depot's own directory, and what a SIGKILL leaves there is gone once
// depotfs starts again.
func TestKilledUploadLeavesNothing(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	spool := d.db + ".spool"
	u := beginUpload(t, d, map[string]any{"path": "/z", "format": "zip"})
	pw, _ := putAsync(t, u, 64<<20)
	go pw.Write(make([]byte, 8<<20))
	var left []string
	waitFor(t, 10*time.Second, "the upload spooled under the depot's directory", func() bool {
		left, _ = filepath.Glob(filepath.Join(spool, "*"))
		return len(left) > 0
	})
	d.kill()
	for _, p := range left {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is gone before the restart: %v", p, err)
		}
	}
	d2 := startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount})
	if rest, _ := filepath.Glob(filepath.Join(spool, "*")); len(rest) > 0 {
		t.Errorf("after the restart the spool holds %v", rest)
	}
	d2.mustCall("guide_cache_stats", map[string]any{})
}
