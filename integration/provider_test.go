package integration_test

import (
	"crypto/md5"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProviderContract drives the real binary over HTTP with a client
// that knows only the file-provider contract: all seven tools, each error
// type, depot paths and mount paths, and the host reading the paths the
// listing returned.
func TestProviderContract(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP}) // default --tools guide,provider
	files := map[string][]byte{
		"/scan/app/main.py":          []byte("import requests\nprint('hi')\n"),
		"/scan/app/requirements.txt": []byte("requests==2.31.0\n"),
		"/scan/app/lib/util.py":      []byte("def util():\n    return 1\n"),
		"/scan/app/lib/latin1.txt":   []byte("caf\xe9\n"),
		"/scan/bin/blob.bin":         pseudoRandom(300<<10, 5),
	}
	for p, data := range files {
		d.mustCall("guide_cache_file", map[string]any{"path": p, "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"})
	}
	pc := providerClient{d.client}
	mnt := d.path("/scan")

	t.Run("read_file", func(t *testing.T) {
		for _, path := range []string{"/scan/app/main.py", d.path("/scan/app/main.py")} {
			got, err := pc.ReadFile(path, "utf-8", 0)
			if err != nil || got != string(files["/scan/app/main.py"]) {
				t.Errorf("read_file(%s) = %q, %v", path, got, err)
			}
		}
		if got, err := pc.ReadFile("/scan/app/lib/latin1.txt", "latin-1", 1000); err != nil || got != "café\n" {
			t.Errorf("read_file latin-1 = %q, %v", got, err)
		}
	})
	t.Run("read_file_binary", func(t *testing.T) {
		got, err := pc.ReadFileBinary(d.path("/scan/bin/blob.bin"), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := base64.StdEncoding.DecodeString(got); err != nil || sha256hex(b) != sha256hex(files["/scan/bin/blob.bin"]) {
			t.Errorf("read_file_binary: %d bytes, %v", len(b), err)
		}
	})
	t.Run("list_directory", func(t *testing.T) {
		got, err := pc.ListDirectory(mnt, "*.py", true, 0)
		want := []string{mnt + "/app/lib/util.py", mnt + "/app/main.py"}
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("list_directory = %q, %v; want %q", got, err, want)
		}
		// The mount paths the listing returned are real host paths.
		for _, p := range got {
			onDisk, err := os.ReadFile(p)
			if err != nil || string(onDisk) != string(files["/scan"+strings.TrimPrefix(p, mnt)]) {
				t.Errorf("host read of listed %s: %q, %v", p, onDisk, err)
			}
		}
		got, err = pc.ListDirectory("/scan", "", false, 0)
		if err != nil || !slices.Equal(got, []string{"/scan/app", "/scan/bin"}) {
			t.Errorf("list_directory(/scan) = %q, %v", got, err)
		}
		got, err = pc.ListDirectory("/scan", "", true, 2)
		if err != nil || len(got) != 2 {
			t.Errorf("list_directory with max_files 2 = %q, %v", got, err)
		}
	})
	t.Run("file_exists", func(t *testing.T) {
		for path, want := range map[string]bool{
			"/scan/app/main.py":            true,
			d.path("/scan/app"):            true,
			"/scan/app/nope.py":            false,
			"../../../etc/passwd":          false,
			filepath.Join(d.db, "..", "x"): false,
		} {
			if got, err := pc.FileExists(path); err != nil || got != want {
				t.Errorf("file_exists(%s) = %v, %v; want %v", path, got, err, want)
			}
		}
	})
	t.Run("get_file_stats", func(t *testing.T) {
		st, err := pc.GetFileStats(d.path("/scan/app/requirements.txt"))
		if err != nil || st.Path != d.path("/scan/app/requirements.txt") || st.FileType != "file" || st.Size != 17 || !st.IsReadable || st.IsDirectory || st.ModifiedTime == "" {
			t.Errorf("get_file_stats = %+v, %v", st, err)
		}
		fi, err := os.Stat(st.Path)
		if err != nil || fi.Size() != st.Size {
			t.Errorf("the mount shows %v, %v", fi, err)
		}
		st, err = pc.GetFileStats("/scan/app/lib")
		if err != nil || st.FileType != "directory" || !st.IsDirectory {
			t.Errorf("get_file_stats(dir) = %+v, %v", st, err)
		}
	})
	t.Run("calculate_file_hash", func(t *testing.T) {
		data := files["/scan/bin/blob.bin"]
		m5, s1 := md5.Sum(data), sha1.Sum(data)
		for algorithm, want := range map[string]string{"md5": hex.EncodeToString(m5[:]), "sha1": hex.EncodeToString(s1[:]), "sha256": sha256hex(data)} {
			if got, err := pc.CalculateFileHash("/scan/bin/blob.bin", algorithm); err != nil || got != want {
				t.Errorf("calculate_file_hash %s = %q, %v; want %s", algorithm, got, err, want)
			}
		}
		if got := strings.Fields(runProgram(t, "sha256sum", d.path("/scan/bin/blob.bin")))[0]; got != sha256hex(data) {
			t.Errorf("sha256sum through the mount %s", got)
		}
	})
	t.Run("find_files", func(t *testing.T) {
		got, err := pc.FindFiles("/scan", []string{"*.py", "requirements*.txt"}, true, 0)
		want := []string{"/scan/app/lib/util.py", "/scan/app/main.py", "/scan/app/requirements.txt"}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("find_files = %q, %v; want %q", got, err, want)
		}
		got, err = pc.FindFiles(mnt+"/app", []string{"*.py"}, false, 0)
		if err != nil || !slices.Equal(got, []string{mnt + "/app/main.py"}) {
			t.Errorf("find_files not recursive = %q, %v", got, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		before := snapshot(t, d.mount)
		for _, tt := range []struct {
			name    string
			call    func() error
			errType string
		}{
			{"missing file", func() error { _, err := pc.ReadFile("/scan/missing.py", "utf-8", 0); return err }, "FileNotFoundError"},
			{"missing directory", func() error { _, err := pc.ListDirectory(d.path("/nope"), "", false, 0); return err }, "FileNotFoundError"},
			{"missing stats", func() error { _, err := pc.GetFileStats("/nope"); return err }, "FileNotFoundError"},
			{"escape", func() error { _, err := pc.ReadFile("../../../etc/passwd", "utf-8", 0); return err }, "PermissionError"},
			{"escape in find_files", func() error { _, err := pc.FindFiles("/scan/../../..", []string{"*"}, true, 0); return err }, "PermissionError"},
			{"over max_size", func() error { _, err := pc.ReadFileBinary("/scan/bin/blob.bin", 1000); return err }, "FileSizeLimitExceededError"},
			{"over max_size as a string", func() error { _, err := pc.ReadFile("/scan/app/main.py", "utf-8", 5); return err }, "FileSizeLimitExceededError"},
			{"a directory", func() error { _, err := pc.ReadFile(d.path("/scan/app"), "utf-8", 0); return err }, "FileProviderError"},
			{"bad encoding", func() error { _, err := pc.ReadFile("/scan/app/lib/latin1.txt", "utf-8", 0); return err }, "FileProviderError"},
			{"bad algorithm", func() error { _, err := pc.CalculateFileHash("/scan/app/main.py", "whirlpool"); return err }, "FileProviderError"},
			{"list a file", func() error { _, err := pc.ListDirectory("/scan/app/main.py", "", false, 0); return err }, "FileProviderError"},
		} {
			err := tt.call()
			var pe *providerError
			if !errors.As(err, &pe) || pe.Type != tt.errType || pe.Message == "" {
				t.Errorf("%s: %v, want a %s", tt.name, err, tt.errType)
				continue
			}
			if strings.Contains(pe.Message, d.db) {
				t.Errorf("%s: message reveals the host: %s", tt.name, pe.Message)
			}
		}
		if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
			t.Errorf("provider calls changed the depot:\n%s", diff)
		}
	})
}
