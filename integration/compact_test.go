package integration_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var compactRE = regexp.MustCompile(`(?s)before .*\((\d+) bytes\).*after .*\((\d+) bytes\)`)

// TestCompact pushes 2 MiB as agents do (4 files of 256 KiB in single
// calls, one of 1 MiB in 256 KiB chunks; 30 MiB in a soak), refuses to compact while the
// server runs, compacts once it is stopped, and reads every file back
// through a new server.
func TestCompact(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	want := map[string]string{}
	small, smallSize, bigSize, chunk := bySoak(4, 14), bySoak(256<<10, 1<<20), bySoak(1<<20, 16<<20), bySoak(256<<10, 1<<20)
	total := small*smallSize + bigSize
	for i := range small {
		p := fmt.Sprintf("/small/%02d.bin", i)
		data := pseudoRandom(smallSize, uint64(i))
		d.mustCall("guide_cache_file", map[string]any{"path": p, "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"})
		want[p] = sha256hex(data)
	}
	big := pseudoRandom(bigSize, 99)
	pushChunked(d, "/big.bin", big, chunk, "big", -1)
	want["/big.bin"] = sha256hex(big)

	code, _, stderr := runDepotfs(t, "compact", "--db", d.db)
	if code != 1 || !strings.Contains(stderr, "pid "+strconv.Itoa(d.cmd.Process.Pid)) || !strings.Contains(stderr, "offline") {
		t.Errorf("compact while serving: exit %d\n%s", code, stderr)
	}

	d.stop()
	code, stdout, stderr := runDepotfs(t, "compact", "--db", d.db)
	m := compactRE.FindStringSubmatch(stdout)
	if code != 0 || m == nil {
		t.Fatalf("compact: exit %d\n%s%s", code, stdout, stderr)
	}
	before, _ := strconv.ParseInt(m[1], 10, 64)
	after, _ := strconv.ParseInt(m[2], 10, 64)
	fi, err := os.Stat(d.db)
	if err != nil || fi.Size() != after {
		t.Errorf("database %v bytes after compact, output says %d", fi.Size(), after)
	}
	t.Logf("%d KiB pushed: database %d bytes (%.1f MiB); after compact %d bytes (%.1f MiB)",
		total>>10, before, float64(before)/(1<<20), after, float64(after)/(1<<20))
	if after >= before || after < int64(total) {
		t.Errorf("compact: %d bytes before, %d after", before, after)
	}

	d2 := startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount})
	for p, sum := range want {
		got, err := os.ReadFile(d2.path(p))
		if err != nil || sha256hex(got) != sum {
			t.Errorf("%s after compact: %v", p, err)
		}
	}
	d2.mustCall("guide_cache_file", map[string]any{"path": "/after.txt", "content": "writes still work"})
}
