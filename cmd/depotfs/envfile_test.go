package main

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/grant"
)

func writeEnvFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "depotfs.env")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadEnvFile(t *testing.T) {
	path := writeEnvFile(t, `# comment
; another comment

DEPOTFS_LOG_LEVEL=debug
export DEPOTFS_MOUNT = "/mnt/with space"
DEPOTFS_GRANTS='guide:/a:rw,*:/b:r'
PATH=/usr/bin
DEPOTFS_EMPTY=
`)
	got, err := readEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"log-level": "debug", "mount": "/mnt/with space", "grants": "guide:/a:rw,*:/b:r", "empty": ""}
	if !maps.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := readEnvFile(writeEnvFile(t, "DEPOTFS_LOG_LEVEL debug\n")); err == nil || !strings.Contains(err.Error(), ":1: want NAME=value") {
		t.Errorf("a line without '=': %v", err)
	}
	if _, err := readEnvFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestApplyEnvFile: the command line and the environment win over the
// file, which wins over the defaults; an unknown setting is refused.
func TestApplyEnvFile(t *testing.T) {
	newSet := func() (*flag.FlagSet, *string, *string, *string) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		a := fs.String("mount", "/default", "")
		b := fs.String("listen", "default", "")
		c := fs.String("log-level", "info", "")
		fs.String("env-file", "", "")
		return fs, a, b, c
	}
	path := writeEnvFile(t, "DEPOTFS_MOUNT=/file\nDEPOTFS_LISTEN=file\nDEPOTFS_LOG_LEVEL=debug\n")
	fs, mount, listen, level := newSet()
	t.Setenv("DEPOTFS_LISTEN", "env")
	if err := parseFlags(fs, []string{"--mount", "/cmdline"}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	explicit, vals, err := applyEnvFile(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 3 || vals["mount"] != "/file" || vals["listen"] != "file" || vals["log-level"] != "debug" {
		t.Errorf("the file's settings = %v", vals)
	}
	if *mount != "/cmdline" || *listen != "env" || *level != "debug" {
		t.Errorf("mount %q listen %q log-level %q, want /cmdline env debug", *mount, *listen, *level)
	}
	if !explicit["mount"] || !explicit["listen"] || explicit["log-level"] {
		t.Errorf("explicit = %v", explicit)
	}
	fs, _, _, _ = newSet()
	if _, _, err := applyEnvFile(fs, writeEnvFile(t, "DEPOTFS_NO_SUCH_FLAG=1\n")); !errors.Is(err, errEnvFileFlag) {
		t.Errorf("an unknown setting: %v", err)
	}
}

// TestReloadEnvFile: a reload applies the file's log level and grants,
// returns to the defaults when they are removed, and leaves what the
// command line fixed alone.
func TestReloadEnvFile(t *testing.T) {
	path := writeEnvFile(t, "DEPOTFS_LOG_LEVEL=warn\nDEPOTFS_GRANTS=guide:/a:rw\n")
	var logs bytes.Buffer
	level := new(slog.LevelVar)
	var grants []grant.Grant
	set := false
	r := &reloader{log: slog.New(slog.NewTextHandler(&logs, nil)), level: level, auth: &httpAuth{}, envFile: path,
		grants: func(g []grant.Grant) { grants, set = g, true }}
	r.reload()
	if level.Level() != slog.LevelWarn || len(grants) != 1 || grants[0].Prefix != "/a" {
		t.Fatalf("after reload: level %v grants %v\n%s", level.Level(), grants, logs.String())
	}
	if err := os.WriteFile(path, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.reload()
	if level.Level() != slog.LevelInfo || grants != nil || !set {
		t.Errorf("after removing both: level %v grants %v, want info and full grants", level.Level(), grants)
	}
	if err := os.WriteFile(path, []byte("DEPOTFS_LOG_LEVEL=loud\nDEPOTFS_GRANTS=guide:/b:rw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	r.reload()
	if level.Level() != slog.LevelInfo || !strings.Contains(logs.String(), "reload incomplete") || len(grants) != 1 {
		t.Errorf("a bad log level: level %v grants %v\n%s", level.Level(), grants, logs.String())
	}
	r.explicit = map[string]bool{"log-level": true, "grants": true}
	if err := os.WriteFile(path, []byte("DEPOTFS_LOG_LEVEL=error\nDEPOTFS_GRANTS=guide:/c:rw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.reload()
	if level.Level() != slog.LevelInfo || grants[0].Prefix != "/b" {
		t.Errorf("the command line's settings changed: level %v grants %v", level.Level(), grants)
	}
}
