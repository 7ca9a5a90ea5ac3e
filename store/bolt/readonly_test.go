package bolt_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// fileState is a file's bytes and mtime, to show that nothing changed it.
type fileState struct {
	data  []byte
	mtime int64
}

func stateOf(t testing.TB, path string) fileState {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{b, fi.ModTime().UnixNano()}
}

// TestReadOnlyChangesNothing: a read-only open of a current and of an
// older database reads the files and leaves the file's bytes and mtime as
// they were; a write fails; a missing file is fs.ErrNotExist and is not
// created.
func TestReadOnlyChangesNothing(t *testing.T) {
	for _, schema := range []string{"current", "schema 1", "schema 2"} {
		t.Run(schema, func(t *testing.T) {
			s, path := openTemp(t, nil)
			mustPut(t, s, "/d/f", fill(100, 'a'))
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			switch schema {
			case "schema 1":
				if err := bolt.Downgrade(path); err != nil {
					t.Fatal(err)
				}
			case "schema 2":
				if err := bolt.DowngradeTo2(path); err != nil {
					t.Fatal(err)
				}
			}
			before := stateOf(t, path)
			ro, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if list, err := ro.ReadDir(t.Context(), "/d"); err != nil || len(list) != 1 {
				t.Errorf("read-only ReadDir /d: %+v, %v", list, err)
			}
			c, err := ro.Open(t.Context(), "/d/f")
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
			c.Close()
			if !bytes.Equal(got, fill(100, 'a')) {
				t.Errorf("read-only read of /d/f: %q", got)
			}
			if _, err := ro.Put(t.Context(), store.PutRequest{Path: "/x", Data: []byte("x")}); err == nil {
				t.Errorf("a write to a read-only store succeeded")
			}
			if err := ro.Close(); err != nil {
				t.Fatal(err)
			}
			if after := stateOf(t, path); !bytes.Equal(after.data, before.data) || after.mtime != before.mtime {
				t.Errorf("the read-only open changed the file (mtime %d -> %d, bytes equal %v)", before.mtime, after.mtime, bytes.Equal(after.data, before.data))
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "typo.db")
	if _, err := bolt.Open(missing, &bolt.Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only open of a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the read-only open created %s: %v", missing, err)
	}
}

// TestUpgradeOnlyWhenAsked: an older database is refused with ErrUpgrade
// and left unchanged without Options.Upgrade; with it, Open keeps a copy
// of the old file at UpgradeCopyPath, still of the old schema.
func TestUpgradeOnlyWhenAsked(t *testing.T) {
	s, path := openTemp(t, nil)
	mustPut(t, s, "/f", fill(100, 'a'))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bolt.DowngradeTo2(path); err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, path)
	if _, err := bolt.Open(path, nil); !errors.Is(err, bolt.ErrUpgrade) {
		t.Fatalf("Open of a schema 2 file without Upgrade: %v, want ErrUpgrade", err)
	}
	if after := stateOf(t, path); !bytes.Equal(after.data, before.data) || after.mtime != before.mtime {
		t.Errorf("the refused open changed the file")
	}
	openAt(t, path, &bolt.Options{Upgrade: true})
	// The copy is the old file: still of the old schema, with its files.
	cp := bolt.UpgradeCopyPath(path, 2)
	if _, err := bolt.Open(cp, nil); !errors.Is(err, bolt.ErrUpgrade) {
		t.Errorf("Open of the copy kept before the upgrade: %v, want ErrUpgrade (the old schema)", err)
	}
	ro, err := bolt.Open(cp, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if e, err := ro.Stat(t.Context(), "/f"); err != nil || e.Size != 100 {
		t.Errorf("/f in the copy kept before the upgrade: %+v, %v", e, err)
	}
}
