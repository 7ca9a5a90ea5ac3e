package beneath_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/internal/beneath"
)

// tree makes a directory with a file, a subdirectory and links out of it,
// and returns it opened, with the directory outside it.
func tree(t *testing.T) (*os.File, string, string) {
	t.Helper()
	root, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600))
	must(os.Mkdir(filepath.Join(root, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(root, "sub", "f"), []byte("inside"), 0o644))
	must(os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "file-link")))
	must(os.Symlink(outside, filepath.Join(root, "dir-link")))
	must(os.Symlink("sub/f", filepath.Join(root, "inner-link")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	d, err := os.Open(root)
	must(err)
	t.Cleanup(func() { d.Close() })
	return d, root, outside
}

func TestOpen(t *testing.T) {
	d, _, _ := tree(t)
	for _, tc := range []struct {
		name string
		want string // content, or "" for an error
		err  error
	}{
		{"a", "a", nil},
		{"sub/f", "inside", nil},
		{"file-link", "", beneath.ErrLink},
		{"inner-link", "", beneath.ErrLink},
		{"dir-link/secret", "", beneath.ErrLink},
		{"../" + "x", "", beneath.ErrName},
		{"/etc/passwd", "", beneath.ErrName},
		{"sub/./f", "", beneath.ErrName},
		{"", "", beneath.ErrName},
		{"a/b", "", nil},
		{"missing", "", os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := beneath.Open(d, tc.name)
			if tc.want == "" {
				if err == nil {
					f.Close()
					t.Fatalf("Open(%q) succeeded", tc.name)
				}
				if tc.err != nil && !errors.Is(err, tc.err) {
					t.Fatalf("Open(%q) = %v, want %v", tc.name, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.name, err)
			}
			defer f.Close()
			got, err := io.ReadAll(f)
			if err != nil || string(got) != tc.want {
				t.Fatalf("read %q: %q, %v", tc.name, got, err)
			}
		})
	}
}

// TestOpenFIFO: a FIFO in a file's place opens without a writer and shows
// its type, so the caller can refuse it instead of hanging.
func TestOpenFIFO(t *testing.T) {
	d, _, _ := tree(t)
	f, err := beneath.Open(d, "fifo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := beneath.Fstat(f)
	if err != nil || st.Mode.Type() != os.ModeNamedPipe {
		t.Fatalf("fstat of the FIFO: %v, %v", st.Mode, err)
	}
}

func TestWalk(t *testing.T) {
	d, _, _ := tree(t)
	var names []string
	types := map[string]os.FileMode{}
	err := beneath.Walk(d, func(name string, st beneath.Stat) error {
		names = append(names, name)
		types[name] = st.Mode.Type()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "dir-link", "fifo", "file-link", "inner-link", "sub", "sub/f"}
	if !slices.Equal(names, want) {
		t.Fatalf("walked %q, want %q", names, want)
	}
	if types["dir-link"] != os.ModeSymlink || types["sub"] != os.ModeDir || types["fifo"] != os.ModeNamedPipe {
		t.Fatalf("types %v", types)
	}
	// A second walk of the same open directory sees the same.
	n := 0
	if err := beneath.Walk(d, func(string, beneath.Stat) error { n++; return nil }); err != nil || n != len(want) {
		t.Fatalf("second walk: %d entries, %v", n, err)
	}
}

// TestWalkSkipDir: fs.SkipDir for a directory skips what it holds and
// goes on with the next entry; for a file it stops the walk.
func TestWalkSkipDir(t *testing.T) {
	d, _, _ := tree(t)
	var names []string
	err := beneath.Walk(d, func(name string, st beneath.Stat) error {
		names = append(names, name)
		if name == "sub" {
			return fs.SkipDir
		}
		return nil
	})
	if want := []string{"a", "dir-link", "fifo", "file-link", "inner-link", "sub"}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("walked %q (%v), want %q", names, err, want)
	}
	err = beneath.Walk(d, func(name string, st beneath.Stat) error {
		if name == "a" {
			return fs.SkipDir
		}
		return nil
	})
	if !errors.Is(err, fs.SkipDir) {
		t.Fatalf("fs.SkipDir for a file: %v, want the walk stopped with it", err)
	}
}

// TestWalkSwappedDirectory: a directory replaced by a link to outside the
// tree after it was listed is not entered.
func TestWalkSwappedDirectory(t *testing.T) {
	d, root, outside := tree(t)
	err := beneath.Walk(d, func(name string, st beneath.Stat) error {
		if name == "sub" {
			if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "old-sub")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(root, "sub")); err != nil {
				t.Fatal(err)
			}
		}
		if name == "sub/secret" {
			t.Fatalf("walked into the link to %s", outside)
		}
		return nil
	})
	if !errors.Is(err, beneath.ErrLink) {
		t.Fatalf("Walk = %v, want ErrLink", err)
	}
}

func TestStatSame(t *testing.T) {
	d, root, _ := tree(t)
	f, err := beneath.Open(d, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before, _ := beneath.Fstat(f)
	again, _ := beneath.Fstat(f)
	if !before.Same(again) {
		t.Fatalf("two fstats differ: %+v %+v", before, again)
	}
	if err := os.Chmod(filepath.Join(root, "a"), 0o600); err != nil {
		t.Fatal(err)
	}
	after, _ := beneath.Fstat(f)
	if before.Same(after) {
		t.Fatalf("a chmod left the stat the same")
	}
}
