package integration_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSeveralHostsSealed runs two hosts of a NATS depot with one key: a
// file written on one reads through the other's mount, the NATS servers'
// files never hold its plaintext, and a third host started with another
// key, or with none, is refused at start naming the key the depot wants.
func TestSeveralHostsSealed(t *testing.T) {
	t.Parallel()
	key := writeKeyFile(t)
	h := startHostsArgs(t, 2, []string{"--key-file", key})
	content := bytes.Repeat([]byte(sealMarker+" shared report\n"), 200) // inline and chunked sizes alike
	h.all[0].mustCall("guide_cache_file", map[string]any{"path": "/small.txt", "content": sealMarker + " small\n"})
	// 300 KB: two chunks of the upload, stored as chunked content, not
	// inline.
	big := bytes.Repeat(content, 50)
	pushChunked(h.all[0], "/big.txt", big, 256<<10, "big", -1)
	waitContent(t, h.all[1].path("/small.txt"), []byte(sealMarker+" small\n"), 30*time.Second)
	waitContent(t, h.all[1].path("/big.txt"), big, 30*time.Second)
	n := 0
	for _, node := range h.cluster.Nodes {
		n += countIn(t, node.Dir)
	}
	if n != 0 {
		t.Errorf("the NATS servers' files hold the plaintext %d times", n)
	}
	// The control: a depot without a key on the same servers puts the
	// plaintext in their files.
	plain := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--store", h.cluster.URL(), "--nats-prefix", h.prefix + "-clear"}})
	plain.mustCall("guide_cache_file", map[string]any{"path": "/small.txt", "content": sealMarker + " small\n"})
	pushChunked(plain, "/big.txt", content, 64<<10, "big", -1)
	plain.stop()
	n = 0
	for _, node := range h.cluster.Nodes {
		n += countIn(t, node.Dir)
	}
	if n == 0 {
		t.Error("the NATS servers' files do not hold the plaintext of a depot without a key: the test looks in the wrong place")
	}
	t.Logf("marker in the servers' files after the clear depot's writes: %d", n)
	other := writeKeyFile(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--key-file", other}, "wrong key"},
		{nil, "the depot is sealed and no key was given"},
	} {
		args := append([]string{"serve", "--db", filepath.Join(t.TempDir(), "depot.db"), "--mount", filepath.Join(t.TempDir(), "m"),
			"--listen", "127.0.0.1:0", "--store", h.cluster.URL(), "--nats-prefix", h.prefix}, c.args...)
		code, out, errOut := runDepotfs(t, args...)
		if code == 0 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "kek-") {
			t.Errorf("a host started with %v: exit %d, want a refusal saying %q and naming the key\n%s%s", c.args, code, c.want, out, tail(errOut, 5))
		}
	}
	if _, err := os.Stat(h.all[1].path("/small.txt")); err != nil {
		t.Errorf("the refused hosts disturbed the depot: %v", err)
	}
}
