package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPushNamesAsTheyAre: depotfs push of a tree whose names are real
// files made on disk stores every name the depot can hold exactly as the
// filesystem holds it (read back through the mount by its original name,
// byte for byte), and skips every other one with a warning naming it
// (quoted), never the whole tree and never under another name: a name
// with a backslash (the depot's rules would make it a directory), one in
// decomposed form (NFD, as macOS writes; the depot composes names), one
// that is not UTF-8, ones with control characters, and a directory whose
// name cannot be stored, with what it holds. Push exits 0.
func TestPushNamesAsTheyAre(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	src := filepath.Join(t.TempDir(), "tree")
	stored := []string{
		"plain.txt",
		"caf\u00e9.txt", // composed (NFC): stored as it is
		"space name, 'single' and \"double\" quotes.txt",
		"pct%2e%2e.txt",
		"emoji \U0001F600.txt",
		"sub/ok.txt",
		"sub/deeper/\u00fcn\u00efc\u00f6d\u00e9.txt",
	}
	skipped := []string{
		"back\\slash.txt",
		"cafe\u0301.txt", // decomposed (NFD): the depot would store it composed, over caf\u00e9.txt
		"bad\xff\xfe.txt",
		"tab\tname.txt",
		"new\nline.txt",
		"sub/esc\x1b[31mred.txt",
	}
	skippedDir := "dir\x01ctl" // with two files in it
	content := func(name string) string { return fmt.Sprintf("the content of %q\n", name) }
	for _, n := range append(append([]string{}, stored...), skipped...) {
		mustWrite(t, filepath.Join(src, filepath.FromSlash(n)), content(n))
	}
	mustWrite(t, filepath.Join(src, skippedDir, "a.txt"), "a")
	mustWrite(t, filepath.Join(src, skippedDir, "b.txt"), "b")

	code, stdout, stderr := runDepotfs(t, "push", "--url", d.url, "--to", "/w", src)
	if code != 0 {
		t.Fatalf("push: exit %d, want 0 (unstorable names skipped)\n%s\n%s", code, stdout, stderr)
	}
	for _, n := range stored {
		got, err := os.ReadFile(d.path("/w/tree/" + n))
		if err != nil || string(got) != content(n) {
			t.Errorf("%q through the mount: %q (%v), want its own content", n, got, err)
		}
	}
	for _, n := range append(append([]string{}, skipped...), skippedDir) {
		local := filepath.Join(src, filepath.FromSlash(n))
		if !strings.Contains(stderr, fmt.Sprintf("%q", local)) || !strings.Contains(stderr, "cannot be stored as it is") {
			t.Errorf("no warning naming %q; stderr:\n%s", local, stderr)
		}
	}
	if strings.Contains(stderr, filepath.Join(skippedDir, "a.txt")) {
		t.Errorf("a file below a skipped directory has its own warning; stderr:\n%s", stderr)
	}

	// Nothing else is in the depot: no skipped name under another name
	// (back/slash.txt, a composed café.txt over the other's content).
	var all []string
	filepath.WalkDir(d.path("/w/tree"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(d.path("/w/tree"), p)
			all = append(all, filepath.ToSlash(rel))
		}
		return nil
	})
	want := slices.Clone(stored)
	slices.Sort(want)
	slices.Sort(all)
	if !slices.Equal(all, want) {
		t.Errorf("the depot holds %q, want exactly %q", all, want)
	}
}
