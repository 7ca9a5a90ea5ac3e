package httpfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/httpfile"
	"github.com/depotfs/depotfs/store"
)

// damaged is content of size bytes whose bytes from bad on fail their
// integrity check, as a sealed store's do past a damaged chunk.
type damaged struct {
	data []byte
	bad  int64
}

func (d damaged) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(d.data)) {
		return 0, io.EOF
	}
	n := copy(p, d.data[off:min(int64(len(d.data)), d.bad)])
	if off+int64(len(p)) > d.bad {
		return n, fmt.Errorf("chunk 3f: %w", store.ErrCorrupt)
	}
	return n, nil
}
func (d damaged) Close() error   { return nil }
func (d damaged) Size() int64    { return int64(len(d.data)) }
func (d damaged) SHA256() string { return strings.Repeat("ab", 32) }

// TestServeCorrupt serves content that fails its integrity check: from
// its first byte, it is a 500 with the tools' words, not a status that
// promised the file, whether the type comes from the name or is sniffed;
// from a later byte, the status has gone out, so the body ends short;
// either way Serve returns the error.
func TestServeCorrupt(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 3*httpfile.CopyBuffer)
	for _, tc := range []struct {
		name, path, rng string
		bad             int64
		want            int
	}{
		{"first byte, typed by name", "/d/f.txt", "", 0, http.StatusInternalServerError},
		{"first byte, sniffed", "/d/f", "", 0, http.StatusInternalServerError},
		{"range at the damage", "/d/f.txt", "bytes=2097152-", 2 << 20, http.StatusInternalServerError},
		{"past the first buffer", "/d/f.txt", "", 2 << 20, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/x", nil)
			if tc.rng != "" {
				r.Header.Set("Range", tc.rng)
			}
			w := httptest.NewRecorder()
			err := httpfile.Serve(w, r, store.Entry{Path: tc.path}, damaged{data, tc.bad})
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("Serve returned %v; want the integrity error", err)
			}
			if w.Code != tc.want {
				t.Fatalf("status %d; want %d", w.Code, tc.want)
			}
			body := w.Body.String()
			if tc.want == http.StatusOK {
				if int64(len(body)) >= int64(len(data)) || w.Header().Get("Content-Length") != fmt.Sprint(len(data)) {
					t.Errorf("body of %d bytes, Content-Length %s; want it short of %d", len(body), w.Header().Get("Content-Length"), len(data))
				}
				return
			}
			if body != store.CorruptMessage(tc.path)+"\n" || w.Header().Get("ETag") != "" || w.Header().Get("Content-Range") != "" {
				t.Errorf("answer %q, headers %v; want the integrity message alone", body, w.Header())
			}
		})
	}
}
