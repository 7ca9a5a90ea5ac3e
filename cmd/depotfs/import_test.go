package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/store/bolt"
)

// exportBytes builds an export by hand: a header (Entries from the
// manifest unless entries >= 0) and the manifest lines, with no files.
func exportBytes(t *testing.T, format, entries int, lines ...string) []byte {
	t.Helper()
	if entries < 0 {
		entries = len(lines)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, b []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Size: int64(len(b)), Mode: 0o600, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	h, _ := json.Marshal(exportHeader{Format: format, Revision: 1, Entries: entries})
	add(exportHeaderName, h)
	add(exportManifestName, []byte(strings.Join(lines, "\n")))
	tw.Close()
	return buf.Bytes()
}

// TestImportRefusesBadExports: an export with a bad header or manifest is
// refused with an error naming the problem, before anything is written.
func TestImportRefusesBadExports(t *testing.T) {
	good := `{"path":"/d","type":"dir"}`
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"not a tar", []byte("hello"), "not a complete depotfs export"},
		{"other format", exportBytes(t, 2, -1, good), "format"},
		{"path escapes", exportBytes(t, exportFormat, -1, good, `{"path":"/../x","type":"file","size":1}`), "line 2"},
		{"relative path", exportBytes(t, exportFormat, -1, `{"path":"x","type":"file","size":1}`), "not a clean depot path"},
		{"bad mode", exportBytes(t, exportFormat, -1, `{"path":"/x","type":"file","mode":"999"}`), "mode"},
		{"bad mtime", exportBytes(t, exportFormat, -1, `{"path":"/x","type":"file","mtime":"yesterday"}`), "mtime"},
		{"count mismatch", exportBytes(t, exportFormat, 5, good), "header says 5"},
		{"missing file bytes", exportBytes(t, exportFormat, -1, `{"path":"/x","type":"file","size":1,"sha256":"aa"}`), "not a complete depotfs export"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			_, err = importFrom(context.Background(), st, bytes.NewReader(c.data), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("import: %v, want an error containing %q", err, c.want)
			}
			if rev, _ := st.Revision(context.Background()); rev != 0 {
				t.Errorf("the refused import changed the depot (revision %d)", rev)
			}
		})
	}
}
