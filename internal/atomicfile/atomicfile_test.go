package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/depotfs/depotfs/internal/atomicfile"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key.pem")
	for _, tt := range []struct {
		data string
		mode fs.FileMode
	}{{"first", 0o600}, {"second, longer than the first", 0o644}} {
		if err := atomicfile.Write(p, []byte(tt.data), tt.mode); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != tt.data {
			t.Fatalf("read %q, %v; want %q", got, err, tt.data)
		}
		if info, _ := os.Stat(p); info.Mode().Perm() != tt.mode {
			t.Errorf("mode %v, want %v", info.Mode().Perm(), tt.mode)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// TestWriteFailureKeepsOld shows a failed write leaves the old file and no
// temporary file: the rename target is a directory, so the rename fails.
func TestWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "taken")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "inside"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := atomicfile.Write(target, []byte("new"), 0o600)
	if err == nil {
		t.Fatal("write over a non-empty directory succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left after a failed write: %v", entries)
	}
	if err := atomicfile.Write(filepath.Join(dir, "missing", "f"), nil, 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write into a missing directory: %v, want fs.ErrNotExist", err)
	}
}
