//go:build legacy

package integration_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The legacy-program comparison: programs a user runs on a tree, run over
// the same tree pushed into depotfs and copied to tmpfs, their outputs
// compared. Slow, and it depends on what is installed, so it runs only
// with the build tag:
//
//	go test -tags legacy -run TestLegacyPrograms -v ./integration
//
// A program that is not installed skips its checks. DEPOTFS_LEGACY_REPORT
// names a file to write the report to (Markdown). A difference that is not
// among the known ones (knownDifferences, each with its reason, also in
// docs/operating.md) fails the test.

// legacyCheck is one program run in the tree's root on both sides.
type legacyCheck struct {
	name  string
	needs []string
	// script runs under sh -c in the tree's root, with $OUT an empty
	// writable directory of its own.
	script string
	// normalize, when set, rewrites the output before comparing.
	normalize func(string) string
}

// modeString matches ls-style mode strings; noWrite clears their write bits of ls-style mode strings: the mount is
// read-only and shows none, which every check would otherwise report.
var modeString = regexp.MustCompile(`(?m)(^|\s)([-dl])([-r][-w][-xsS])([-r][-w][-xsS])([-r][-w][-xtT])`)

func noWrite(s string) string {
	return modeString.ReplaceAllStringFunc(s, func(m string) string {
		return strings.ReplaceAll(m, "w", "-")
	})
}

// noWriteSorted is noWrite, then the lines sorted.
func noWriteSorted(s string) string {
	lines := strings.Split(strings.TrimSuffix(noWrite(s), "\n"), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

var legacyChecks = []legacyCheck{
	{name: "find: files (mode, size, mtime)", needs: []string{"find"},
		script: `find . -type f -printf '%M %s %T@ %P\n'`, normalize: noWriteSorted},
	{name: "find: directories", needs: []string{"find"},
		script: `find . -type d -printf '%M %P\n'`, normalize: noWriteSorted},
	{name: "find -size 0", needs: []string{"find"}, script: `find . -size 0 -printf '%P\n' | LC_ALL=C sort`},
	{name: "find -links 1 (files)", needs: []string{"find"}, script: `find . -type f -links 1 -printf '%P\n' | LC_ALL=C sort`},
	{name: "stat: directory link counts", needs: []string{"stat"}, script: `stat -c '%h %n' . src data`},
	{name: "du -sb (apparent size)", needs: []string{"du"}, script: `du -sb . | cut -f1`},
	{name: "sha256sum of every file", needs: []string{"find", "sha256sum"},
		script: `find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum`},
	{name: "tar (names, sizes, contents)", needs: []string{"tar", "sha256sum"},
		script: `tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode=a-w --format=gnu -cf - --exclude=./.git . | sha256sum`},
	{name: "tar tv (modes, owners, mtimes)", needs: []string{"tar"},
		script: `tar --sort=name -cf - --exclude=./.git . | tar -tvf - --numeric-owner`, normalize: noWrite},
	{name: "cp -a, then diff -r", needs: []string{"cp", "diff"},
		script: `cp -a . "$OUT/copy" && diff -r . "$OUT/copy" && echo same`},
	{name: "cp -a keeps no user.depotfs.* attributes", needs: []string{"cp", "python3"},
		script: `cp -a data/table.csv "$OUT/t" && python3 -c 'import os,sys; print(sorted(a for a in os.listxattr(sys.argv[1]) if "depotfs" in a))' "$OUT/t"`},
	{name: "rsync -a (dry run itemized)", needs: []string{"rsync"},
		script: `rsync -a . "$OUT/r/" && rsync -ain --exclude=.git . "$OUT/r/" | grep -v '^\.d' ; echo done`},
	{name: "git status, log, fsck", needs: []string{"git"},
		script: `git -c safe.directory='*' --no-optional-locks status --porcelain && git -c safe.directory='*' log --format='%H %s' && git -c safe.directory='*' fsck --no-progress 2>&1`},
	{name: "grep -rn", needs: []string{"grep"}, script: `grep -rn --exclude-dir=.git needle . | LC_ALL=C sort`},
	{name: "rg", needs: []string{"rg"}, script: `rg -n --sort path needle`},
	{name: "file", needs: []string{"file", "find"},
		script: `find . -type f -not -path './.git/*' -print0 | LC_ALL=C sort -z | xargs -0 file`},
	{name: "sqlite3 query", needs: []string{"sqlite3"}, script: `sqlite3 db/app.sqlite 'select count(*), sum(v) from t'`},
	{name: "python3 import", needs: []string{"python3"},
		script: `python3 -B -c 'import sys; sys.path.insert(0, "."); import script; print(script.VALUE)'`},
	{name: "python3 mmap (MAP_SHARED) of every file", needs: []string{"python3"},
		script: `python3 -c '
import hashlib, mmap, os
for root, dirs, files in sorted(os.walk(".")):
    dirs.sort()
    for f in sorted(files):
        p = os.path.join(root, f)
        with open(p, "rb") as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                print(p, "empty"); continue
            m = mmap.mmap(fh.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
            print(p, hashlib.sha256(m).hexdigest())
'`},
	{name: "python3 os.sendfile of every file", needs: []string{"python3", "sha256sum"},
		script: `python3 -c '
import os
out = os.open(os.environ["OUT"] + "/all", os.O_WRONLY | os.O_CREAT)
for root, dirs, files in sorted(os.walk(".")):
    dirs.sort()
    for f in sorted(files):
        fd = os.open(os.path.join(root, f), os.O_RDONLY)
        n = os.fstat(fd).st_size
        off = 0
        while off < n:
            off += os.sendfile(out, fd, off, n - off)
        os.close(fd)
' && sha256sum < "$OUT/all"`},
	{name: "dd iflag=direct (O_DIRECT)", needs: []string{"dd", "sha256sum"},
		script: `dd if=data/big.bin iflag=direct bs=1M status=none | sha256sum`},
	{name: "eight parallel readers", needs: []string{"find", "xargs", "sha256sum"},
		script: `find . -type f -print0 | xargs -0 -P8 -n4 sha256sum | LC_ALL=C sort`},
	{name: "unzip -t", needs: []string{"unzip"}, script: `unzip -tq arch/pkg.zip`},
	{name: "zip -r, unzip -l", needs: []string{"zip", "unzip"},
		script: `zip -qrX "$OUT/all.zip" . -x '.git/*' && unzip -Z1 "$OUT/all.zip" | LC_ALL=C sort`},
	{name: "make and gcc", needs: []string{"make", "gcc"}, script: `make -s OUT="$OUT" && "$OUT/hello"`},
	{name: "ls -l (dirs)", needs: []string{"ls"}, script: `ls -ld --time-style=+ src data | awk '{print $1, $2, $5, $NF}'`, normalize: noWrite},
}

// knownDifferences are the differences that remain, with their reason
// (docs/operating.md lists the same).
var knownDifferences = map[string]string{
	"stat: directory link counts": "a directory reports one link (the btrfs convention for \"subdirectories not counted\"), tmpfs 2 + subdirectories",
	"ls -l (dirs)":                "directory link counts as above; directory sizes are 4096 (tmpfs: entries-based)",
	"du -sb (apparent size)":      "directory sizes are 4096 each (tmpfs: 40 + 20 per entry)",
}

// buildLegacyTree writes the tree every program runs over.
func buildLegacyTree(t *testing.T, dir string) {
	t.Helper()
	mtime := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	write := func(rel string, data []byte, mode os.FileMode) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", []byte("# legacy\n\nA needle in the readme.\n"), 0o644)
	write("src/main.c", []byte("#include <stdio.h>\n#include \"util.h\"\nint main(void) { printf(\"hello %d\\n\", twice(21)); return 0; }\n"), 0o644)
	write("src/util.c", []byte("#include \"util.h\"\nint twice(int x) { return 2 * x; } /* needle */\n"), 0o644)
	write("src/util.h", []byte("int twice(int x);\n"), 0o644)
	write("Makefile", []byte("OUT ?= .\n$(OUT)/hello: src/main.c src/util.c src/util.h\n\tgcc -Isrc -o $@ src/main.c src/util.c\n"), 0o644)
	write("script.py", []byte("VALUE = 'needle from python'\n"), 0o755)
	var csv bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&csv, "%d,row %d,%d\n", i, i, i*i)
	}
	write("data/table.csv", csv.Bytes(), 0o644)
	write("data/empty.txt", nil, 0o644)
	write("data/blob.bin", pseudoRandom(300<<10, 5), 0o600)
	write("data/big.bin", pseudoRandom(2<<20+17, 6), 0o644)
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for _, name := range []string{"a.txt", "b/c.txt"} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "%s: needle\n", name)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	write("arch/pkg.zip", zbuf.Bytes(), 0o644)
	if sqlite, err := exec.LookPath("sqlite3"); err == nil {
		if err := os.MkdirAll(filepath.Join(dir, "db"), 0o755); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(dir, "db", "app.sqlite")
		sql := "create table t(k integer primary key, v integer);" + strings.Repeat("insert into t(v) values (7);", 100)
		if out, err := exec.Command(sqlite, db, sql).CombinedOutput(); err != nil {
			t.Fatalf("sqlite3: %v\n%s", err, out)
		}
		os.Chtimes(db, mtime, mtime)
	}
	if git, err := exec.LookPath("git"); err == nil {
		env := append(os.Environ(), "GIT_AUTHOR_DATE=2024-03-01T12:00:00Z", "GIT_COMMITTER_DATE=2024-03-01T12:00:00Z",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "the tree"}, {"gc", "-q"}} {
			cmd := exec.Command(git, args...)
			cmd.Dir, cmd.Env = dir, env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
}

// runLegacy runs a check's script in root and returns its output and exit
// status, with root replaced by "ROOT".
func runLegacy(t *testing.T, c legacyCheck, root string) string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command("sh", "-c", c.script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "OUT="+out, "LC_ALL=C", "TZ=UTC")
	b, err := cmd.CombinedOutput()
	s := strings.ReplaceAll(string(b), root, "ROOT")
	s = strings.ReplaceAll(s, out, "OUT")
	if err != nil {
		s += fmt.Sprintf("[exit: %v]\n", err)
	}
	if c.normalize != nil {
		s = c.normalize(s)
	}
	return s
}

// TestLegacyPrograms runs legacyChecks over one tree pushed into depotfs and
// copied to tmpfs, and reports the differences.
func TestLegacyPrograms(t *testing.T) {
	src := filepath.Join(t.TempDir(), "tree")
	buildLegacyTree(t, src)

	tmpfs := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.MkdirAll(tmpfs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", tmpfs, "tmpfs", 0, "size=64m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(tmpfs, syscall.MNT_DETACH) })
	if out, err := exec.Command("cp", "-a", src, tmpfs).CombinedOutput(); err != nil {
		t.Fatalf("cp -a to tmpfs: %v\n%s", err, out)
	}

	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-calls", "0", "--exec"}})
	if code, stdout, stderr := runDepotfs(t, "push", "--url", d.url, "--to", "/", src); code != 0 {
		t.Fatalf("push: exit %d\n%s\n%s", code, stdout, stderr)
	}
	roots := map[string]string{"depotfs": d.path("/tree"), "tmpfs": filepath.Join(tmpfs, "tree")}

	var report strings.Builder
	report.WriteString("| check | result | reason |\n|---|---|---|\n")
	var same, differ, skipped int
	for _, c := range legacyChecks {
		missing := slices.IndexFunc(c.needs, func(p string) bool { _, err := exec.LookPath(p); return err != nil })
		if missing >= 0 {
			skipped++
			fmt.Fprintf(&report, "| %s | skipped | %s is not installed |\n", c.name, c.needs[missing])
			continue
		}
		got, want := runLegacy(t, c, roots["depotfs"]), runLegacy(t, c, roots["tmpfs"])
		reason, known := knownDifferences[c.name]
		switch {
		case got == want:
			same++
			fmt.Fprintf(&report, "| %s | same | |\n", c.name)
		case known:
			differ++
			fmt.Fprintf(&report, "| %s | differs | %s |\n", c.name, reason)
			t.Logf("%s differs (known: %s)\n%s", c.name, reason, lineDiff(got, want))
		default:
			differ++
			fmt.Fprintf(&report, "| %s | differs | not explained |\n", c.name)
			t.Errorf("%s differs\n%s", c.name, lineDiff(got, want))
		}
	}
	fmt.Fprintf(&report, "\n%d same, %d different, %d skipped\n", same, differ, skipped)
	t.Logf("report:\n%s", report.String())
	if p := os.Getenv("DEPOTFS_LEGACY_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// lineDiff lists the lines only one of two outputs has: "- " for depotfs's,
// "+ " for tmpfs's.
func lineDiff(depotfs, tmpfs string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	a, b := count(depotfs), count(tmpfs)
	var out strings.Builder
	for _, l := range strings.Split(depotfs, "\n") {
		if a[l] != b[l] {
			fmt.Fprintf(&out, "- %s (%d times)\n", l, a[l])
		}
	}
	for _, l := range strings.Split(tmpfs, "\n") {
		if a[l] != b[l] {
			fmt.Fprintf(&out, "+ %s (%d times)\n", l, b[l])
		}
	}
	if out.Len() == 0 {
		out.WriteString("the same lines, in another order:\n--- depotfs\n" + depotfs + "--- tmpfs\n" + tmpfs)
	}
	return out.String()
}
