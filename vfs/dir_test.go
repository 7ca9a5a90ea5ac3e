package vfs_test

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs"
)

func TestReadDir(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	for _, p := range []string{"/top.txt", "/d/one", "/d/two", "/d/sub/three", "/d/zz"} {
		put(t, st, m, store.PutRequest{Path: p, Data: []byte(p)})
	}
	if _, err := st.Declare(context.Background(), store.DeclareRequest{Entries: []store.Declaration{
		{Path: "/d/emptydir", Kind: store.KindDir},
		{Path: "/d/placeholder", Kind: store.KindFile, Size: 42},
	}}); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, m)

	tests := []struct {
		dir  string
		want []string // name, "/" suffix for directories
	}{
		{"/", []string{"d/", "top.txt"}},
		{"/d", []string{"emptydir/", "one", "placeholder", "sub/", "two", "zz"}},
		{"/d/sub", []string{"three"}},
		{"/d/emptydir", nil},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			for pass := range 2 { // the second pass is served from the kernel's cache
				ents, err := os.ReadDir(m.path(tt.dir))
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, e := range ents {
					name := e.Name()
					if e.IsDir() {
						name += "/"
					}
					got = append(got, name)
					want, err := st.Stat(context.Background(), strings.TrimSuffix(tt.dir, "/")+"/"+e.Name())
					if err != nil {
						t.Fatal(err)
					}
					info, err := e.Info()
					if err != nil {
						t.Fatal(err)
					}
					if ino := info.Sys().(*syscall.Stat_t).Ino; ino != vfs.Ino(want) {
						t.Errorf("%s: ino %d, want %d", name, ino, vfs.Ino(want))
					}
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("pass %d: ReadDir(%s) = %v, want %v", pass, tt.dir, got, tt.want)
				}
			}
		})
	}

	// ls -a lists . and .., and ls -l stats everything in one go.
	out, err := exec.Command("ls", "-a", m.path("/d/sub")).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, []string{".", "..", "three"}) {
		t.Errorf("ls -a = %q", got)
	}
	if out, err := exec.Command("ls", "-lR", m.Dir()).CombinedOutput(); err != nil {
		t.Errorf("ls -lR: %v\n%s", err, out)
	}

	// Reading a directory in small batches, and rewinding it, gives the same listing.
	f, err := os.Open(m.path("/d"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	for {
		batch, err := f.Readdirnames(2)
		names = append(names, batch...)
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	again, err := f.Readdirnames(-1)
	if err != nil || !slices.Equal(names, again) || len(names) != 6 {
		t.Errorf("batched %v, after rewind %v (%v)", names, again, err)
	}

	// Errors: a missing name, a file used as a directory, a directory read as a file.
	if _, err := os.Stat(m.path("/nope")); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("stat missing: %v", err)
	}
	if _, err := os.ReadDir(m.path("/top.txt")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("readdir of a file: %v", err)
	}
	if _, err := os.Stat(m.path("/top.txt/x")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("stat below a file: %v", err)
	}
	if _, err := os.ReadFile(m.path("/d")); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("read of a directory: %v", err)
	}
	// A name in another Unicode normalization is not the stored name.
	put(t, st, m, store.PutRequest{Path: "/caf\u00e9", Data: []byte("nfc")})
	if _, err := os.Stat(m.path("/cafe\u0301")); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("stat of the NFD spelling: %v, want not exist", err)
	}
}

// TestPlaceholder checks that a file whose content has not arrived is
// listed with its declared size but fails to read with EIO, logging why.
func TestPlaceholder(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := st.Declare(context.Background(), store.DeclareRequest{Entries: []store.Declaration{
		{Path: "/later/report.pdf", Kind: store.KindFile, Size: 4242, MTime: mtime},
	}}); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, m)
	p := m.path("/later/report.pdf")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 4242 || !fi.ModTime().Equal(mtime) || !fi.Mode().IsRegular() {
		t.Errorf("placeholder stat: size %d mtime %v mode %v", fi.Size(), fi.ModTime(), fi.Mode())
	}
	if _, err := os.ReadFile(p); !errors.Is(err, syscall.EIO) {
		t.Errorf("read placeholder: %v, want EIO", err)
	}
	if out, err := exec.Command("cat", p).CombinedOutput(); err == nil || !strings.Contains(string(out), "Input/output error") {
		t.Errorf("cat placeholder: %v, %s", err, out)
	}
	if logs := m.log.String(); !strings.Contains(logs, "/later/report.pdf") || !strings.Contains(logs, "not present") {
		t.Errorf("no log line names the placeholder:\n%s", logs)
	}

	// When the content arrives, it reads.
	put(t, st, m, store.PutRequest{Path: "/later/report.pdf", Data: pattern(4242, 7)})
	if got := readFile(t, p); len(got) != 4242 {
		t.Errorf("after the content arrived: read %d bytes", len(got))
	}
}
