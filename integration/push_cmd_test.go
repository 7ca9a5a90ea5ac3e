package integration_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPushCommand runs "depotfs push" on a file and a directory tree: every
// file reads back through the mount; without a terminal it prints one
// summary line; --json prints the server's replies; a refused PATH makes
// the exit status non-zero.
func TestPushCommand(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	tok, _ := issueToken(t, tokens, "ci", "guide:/ci:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tokens", tokens}, client: clientAuth{bearer: tok}})
	src := t.TempDir()
	want := map[string][]byte{}
	write := func(rel string, data []byte) {
		p := filepath.Join(src, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 150 {
		rel := fmt.Sprintf("tree/sub%d/f%03d.txt", i%7, i)
		data := pseudoRandom(i*97%5000, uint64(i))
		write(rel, data)
		want["/ci/"+rel] = data
	}
	big := pseudoRandom(5<<20+3, 99)
	write("big.bin", big)
	want["/ci/big.bin"] = big
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "tree", "link")); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runDepotfs(t, "push", "--url", d.url, "--token-file", tokenFile, "--to", "/ci",
		filepath.Join(src, "tree"), filepath.Join(src, "big.bin"))
	if code != 0 {
		t.Fatalf("push: exit %d\n%s\n%s", code, stdout, stderr)
	}
	wantLines := []string{
		filepath.Join(src, "tree") + " -> /ci/tree (150 files, 7 directories,",
		filepath.Join(src, "big.bin") + " -> /ci/big.bin (1 file,",
		"pushed 2 of 2 paths: 151 files",
	}
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); len(lines) != len(wantLines) {
		t.Errorf("stdout %q, want a line per PATH and a summary", stdout)
	} else {
		for i, want := range wantLines {
			if !strings.HasPrefix(lines[i], want) {
				t.Errorf("stdout line %d %q, want it to start %q", i+1, lines[i], want)
			}
		}
	}
	if !strings.Contains(stderr, "skipping") || !strings.Contains(stderr, "link") {
		t.Errorf("stderr %q does not warn about the skipped symlink", stderr)
	}
	for p, data := range want {
		got, err := os.ReadFile(d.path(p))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s through the mount: %d bytes, %v; want the %d pushed", p, len(got), err, len(data))
		}
	}

	// --json, and a PATH the token may not write: exit 1, the refusal named.
	code, stdout, _ = runDepotfs(t, "push", "--url", d.url, "--token-file", tokenFile, "--json", "--to", "/elsewhere", filepath.Join(src, "big.bin"))
	var r struct {
		Local, Path, Error string
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("--json output %q: %v", stdout, err)
	}
	if code != 1 || r.Path != "/elsewhere/big.bin" || !strings.Contains(r.Error, "security") {
		t.Errorf("push outside the grants: exit %d, %+v", code, r)
	}
	if _, err := os.Stat(d.path("/elsewhere")); err == nil {
		t.Errorf("a refused push stored something")
	}
}
