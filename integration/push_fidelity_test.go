package integration_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store/nats/natstest"
)

// TestPushGitRepository: a git repository pushed right after git gc
// (empty .git/refs/heads, .git/refs/tags) is a repository on the mount,
// and find -type d and diff -r agree with the source, empty directories
// included.
func TestPushGitRepository(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	repo := filepath.Join(t.TempDir(), "repo")
	mustWrite(t, filepath.Join(repo, "main.go"), "package main\n")
	mustWrite(t, filepath.Join(repo, "docs", "a.md"), "# a\n")
	if err := os.MkdirAll(filepath.Join(repo, "empty", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		return runProgram(t, "git", append([]string{"-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@example.org", "-C", repo}, args...)...)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "first")
	git("gc", "-q")
	if names, err := os.ReadDir(filepath.Join(repo, ".git", "refs", "heads")); err != nil || len(names) != 0 {
		t.Fatalf("after git gc, .git/refs/heads holds %d entries (%v); the test needs it empty", len(names), err)
	}

	code, stdout, stderr := runDepotfs(t, "push", "--url", d.url, "--to", "/work", repo)
	if code != 0 {
		t.Fatalf("push: exit %d\n%s\n%s", code, stdout, stderr)
	}
	mounted := d.path("/work/repo")
	out, err := exec.Command("git", "-c", "safe.directory=*", "-C", mounted, "log", "--format=%s").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "first" {
		t.Errorf("git log on the mount: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-c", "safe.directory=*", "-C", mounted, "status", "--porcelain").CombinedOutput(); err != nil {
		t.Errorf("git status on the mount: %v\n%s", err, out)
	}
	dirs := func(root string) []string {
		var found []string
		for _, line := range strings.Split(strings.TrimSpace(runProgram(t, "find", root, "-type", "d")), "\n") {
			found = append(found, strings.TrimPrefix(line, root))
		}
		slices.Sort(found)
		return found
	}
	if src, got := dirs(repo), dirs(mounted); !slices.Equal(src, got) {
		t.Errorf("find -type d differs:\nsource %q\nmount  %q", src, got)
	}
	if out, err := exec.Command("diff", "-r", repo, mounted).CombinedOutput(); err != nil {
		t.Errorf("diff -r source mount: %v\n%s", err, out)
	}

	// An empty directory as PATH is made too.
	empty := filepath.Join(t.TempDir(), "nothing-yet")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runDepotfs(t, "push", "--url", d.url, "--to", "/work", empty); code != 0 {
		t.Errorf("push of an empty directory: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if st, err := os.Stat(d.path("/work/nothing-yet")); err != nil || !st.IsDir() {
		t.Errorf("the empty directory pushed is not one on the mount: %v", err)
	}
}

// TestPushFileKeepsModeAndMTime: a file pushed as a PATH keeps its mode
// and mtime, as the same file inside a pushed directory does.
func TestPushFileKeepsModeAndMTime(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	dir := filepath.Join(t.TempDir(), "dir")
	tool := filepath.Join(dir, "tool.sh")
	mustWrite(t, tool, "#!/bin/sh\necho hi\n")
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chmod(tool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tool, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runDepotfs(t, "push", "--url", d.url, "--to", "/alone", tool)
	if code != 0 {
		t.Fatalf("push FILE: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runDepotfs(t, "push", "--url", d.url, "--to", "/tree", dir); code != 0 {
		t.Fatalf("push DIR: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The mount shows the stored mode without write bits (read-only).
	want := "500 " + strconv.FormatInt(mtime.Unix(), 10)
	for _, p := range []string{"/alone/tool.sh", "/tree/dir/tool.sh"} {
		if got := strings.TrimSpace(runProgram(t, "stat", "-c", "%a %Y", d.path(p))); got != want {
			t.Errorf("stat %s = %q, want %q (mode 0700 less write bits, mtime %v)", p, got, want, mtime)
		}
	}
}

// TestPushNamesDestinations: each PATH is stored at --to/NAME, NAME the
// last component of its absolute path ("." and ".." included), and the
// summary names each destination as stored.
func TestPushNamesDestinations(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	root := filepath.Join(t.TempDir(), "push5")
	mustWrite(t, filepath.Join(root, "inner", "f"), "f\n")
	mustWrite(t, filepath.Join(root, "top.txt"), "top\n")
	inner := filepath.Join(root, "inner")
	for _, tc := range []struct {
		path, to, wantLine string
		want               []string // depot files
	}{
		{"..", "/push5/deep", ".. -> /push5/deep/push5 (2 files, 1 directory", []string{"/push5/deep/push5/inner/f", "/push5/deep/push5/top.txt"}},
		{".", "/dot", ". -> /dot/inner (1 file", []string{"/dot/inner/f"}},
		{"../top.txt", "/file/", "../top.txt -> /file/top.txt (1 file", []string{"/file/top.txt"}},
	} {
		code, stdout, stderr := runDepotfsIn(t, inner, nil, "push", "--url", d.url, "--to", tc.to, tc.path)
		if code != 0 || !strings.Contains(stdout, tc.wantLine) {
			t.Errorf("push --to %s %s: exit %d, stdout lacks %q:\n%s\n%s", tc.to, tc.path, code, tc.wantLine, stdout, stderr)
		}
		for _, p := range tc.want {
			if _, err := os.Stat(d.path(p)); err != nil {
				t.Errorf("push --to %s %s: %s not stored: %v", tc.to, tc.path, p, err)
			}
		}
	}
	if _, err := os.Stat(d.path("/push5/inner")); err == nil {
		t.Errorf("push --to /push5/deep .. wrote to /push5/inner")
	}
	code, _, stderr := runDepotfsIn(t, inner, nil, "push", "--url", d.url, "--to", "/x", "/")
	if code == 0 || !strings.Contains(stderr, "no name") {
		t.Errorf("push of / : exit %d, stderr %q", code, stderr)
	}
}

// TestPushLargeTree: a directory of 2,500 small files (20,000 on NATS in
// a soak) is pushed whole, whatever one change of the store can hold: push
// splits it into changes the store takes, without the user seeing a batch
// limit. The NATS store runs with a change of at most 1000 records (about
// 333 small files), as its servers allow by default, so push has to halve
// its batches. The bolt store has no such limit and pushes its files in
// three batches; it fsyncs every file a tar stream stages, which makes
// 20,000 cost minutes on a busy machine and starve the tests beside it.
func TestPushLargeTree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		store string
		files int
	}{{"bolt", 2500}, {"nats", bySoak(2500, 20000)}} {
		t.Run(tc.store, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join(t.TempDir(), "big")
			for i := range tc.files {
				p := filepath.Join(src, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%05d.txt", i))
				if i < 50 {
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(p, []byte(strconv.Itoa(i)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var d *daemon
			if tc.store == "bolt" {
				d = startDaemon(t, daemonConfig{transport: overHTTP})
			} else {
				h := &hosts{cluster: natstest.Start(t, 3), prefix: fmt.Sprintf("it%d", depotSeq.Add(1))}
				d = startDaemon(t, daemonConfig{transport: overHTTP, args: []string{
					"--store", h.cluster.URL(), "--nats-prefix", h.prefix, "--nats-max-batch", "1000"}})
			}
			code, stdout, stderr := runDepotfsIn(t, "", nil, "push", "--url", d.url, "--to", "/in", src)
			if code != 0 || !strings.Contains(stdout, fmt.Sprintf("(%d files, 50 directories", tc.files)) {
				t.Fatalf("push of %d files: exit %d\n%.2000s\n%.2000s", tc.files, code, stdout, stderr)
			}
			got := 0
			filepath.WalkDir(d.path("/in/big"), func(_ string, e os.DirEntry, err error) error {
				if err == nil && !e.IsDir() {
					got++
				}
				return nil
			})
			if got != tc.files {
				t.Errorf("%d files on the mount, want %d", got, tc.files)
			}
			if data, err := os.ReadFile(d.path("/in/big/d07/f02357.txt")); err != nil || string(data) != "2357" {
				t.Errorf("a file of the tree: %q, %v", data, err)
			}
		})
	}
}
