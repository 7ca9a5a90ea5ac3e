package integration_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestHugeNamesBounded: a 1 MiB tool name and a 1 MiB argument name
// (4 MiB in a soak) come back in the reply, the server log and the audit
// record as a few hundred bytes with their length and hash.
func TestHugeNamesBounded(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	huge := strings.Repeat("n", bySoak(1<<20, 4<<20))
	size := fmt.Sprint(len(huge))
	rc := newRawClient(t, d.url)
	_, r := rc.call(1, huge, "{}")
	if r.Error == nil && (r.Result == nil || !r.Result.IsError) {
		t.Fatalf("a call of a huge tool name succeeded: %.300s", r.raw)
	}
	if len(r.raw) > 2048 || !strings.Contains(string(r.raw), size+" bytes, sha256:") {
		t.Errorf("reply to a %s-byte tool name: %d bytes: %.300s", size, len(r.raw), r.raw)
	}
	_, r = rc.call(2, "guide_cache_file", `{"path":"/a.txt","content":"x","`+huge+`":1}`)
	if r.Result == nil || !r.Result.IsError {
		t.Fatalf("a call with a huge argument name succeeded: %.300s", r.raw)
	}
	if len(r.raw) > 8192 || !strings.Contains(string(r.raw), size+" bytes") {
		t.Errorf("reply to a %s-byte argument name: %d bytes: %.300s", size, len(r.raw), r.raw)
	}
	d.stop()
	for i, line := range strings.Split(d.logs.String(), "\n") {
		if len(line) > 4096 {
			t.Errorf("server log line %d is %d bytes: %.200s", i+1, len(line), line)
		}
	}
	f, err := os.Open(d.auditLog())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) > 8192 {
			t.Errorf("audit record %d is %d bytes", n, len(sc.Bytes()))
		}
	}
	if n < 2 {
		t.Fatalf("%d audit records; want the two refused calls", n)
	}
}
