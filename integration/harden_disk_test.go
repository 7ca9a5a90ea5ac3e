package integration_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiskFull: with the database and the audit log on
// a small disk, writes are refused with a disk_full error naming the free
// and needed bytes before the disk is full; every write answered with
// success is stored and readable, the refused one is not; reads, status
// and the audit log keep working.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	// Files of 256 KiB onto 8 MiB above the reserve: 12 are stored
	// before the refusal, as with 512 KiB files on a disk twice the size
	// (the database grows in steps that double), for half the bytes, each
	// of which the race-built test's JSON encoding costs CPU.
	disk := smallFS(t, 12<<20)
	d := startDaemon(t, daemonConfig{transport: overHTTP, db: filepath.Join(disk, "depot.db"), args: []string{"--disk-reserve", "4MiB"}})
	var stored [][]byte
	var refused *envelope
	for i := range 48 {
		data := pseudoRandom(256<<10, uint64(i))
		env := d.call("guide_cache_file", map[string]any{"path": fmt.Sprintf("/f/%02d.bin", i),
			"content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"})
		if !env.Success {
			refused = &env
			break
		}
		stored = append(stored, data)
	}
	if refused == nil {
		t.Fatal("12 MiB pushed onto a 12 MiB disk without a refusal")
	}
	if refused.Error.Type != "disk_full" || !strings.Contains(refused.Error.Message, "bytes free") || !strings.Contains(refused.Error.Message, "needs") {
		t.Fatalf("refusal %+v; want a disk_full error naming free and needed bytes", refused.Error)
	}
	if len(stored) < 10 {
		t.Fatalf("only %d files stored before the refusal", len(stored))
	}
	if _, err := os.Stat(d.path(fmt.Sprintf("/f/%02d.bin", len(stored)))); err == nil {
		t.Error("the refused file is in the mount")
	}
	for i, data := range stored {
		got, err := os.ReadFile(d.path(fmt.Sprintf("/f/%02d.bin", i)))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("acknowledged file %d: %d bytes, %v", i, len(got), err)
		}
	}
	d.mustCall("guide_cache_stats", map[string]any{})
	res, err := callTool(d.client, "file_exists", map[string]any{"path": "/f/00.bin"})
	if err != nil || !strings.Contains(res.text, "true") {
		t.Errorf("file_exists of a stored file on a full disk: %+v, %v", res, err)
	}
	d.stop()
	if code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", filepath.Join(disk, "audit.log")); code != 0 {
		t.Fatalf("audit verify after the disk filled: exit %d\n%s%s", code, out, errOut)
	}
}
