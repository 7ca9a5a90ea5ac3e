package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// failingReader yields data, then fails with errBroken instead of io.EOF.
type failingReader struct{ r io.Reader }

var errBroken = errors.New("connection reset")

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errBroken
	}
	return n, err
}

// testPutStream checks store.Streamer, for the stores that implement it:
// the bytes of a reader stored as Put stores them, with or without a
// declared hash, and every kind of bad stream refused with nothing stored.
func testPutStream(t *testing.T, open Opener) {
	s := open(t, Config{MaxFileBytes: 8 << 20, BigContent: true})
	st, ok := s.(store.Streamer)
	if !ok {
		t.Skip("the store does not implement store.Streamer")
	}
	big := content(3<<20+12345, 7) // several chunks and transactions of any store
	for _, tc := range []struct {
		name     string
		path     string
		data     []byte
		declared bool
		size     int64
	}{
		{"Declared", "/s/declared", big, true, int64(len(big))},
		{"Undeclared", "/s/undeclared", content(2<<20+1, 8), false, -1},
		{"Existing", "/s/again", big, true, -1},
		{"ExistingUndeclared", "/s/again2", big, false, int64(len(big))},
		{"Empty", "/s/empty", nil, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := store.PutRequest{Path: tc.path, Mode: 0o600, Pinned: true}
			if tc.declared {
				req.SHA256 = Sum(tc.data)
			}
			res, err := st.PutStream(t.Context(), req, bytes.NewReader(tc.data), tc.size)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != store.StatusCreated || res.Entry.SHA256 != Sum(tc.data) || res.Entry.Size != int64(len(tc.data)) || !res.Entry.Pinned {
				t.Errorf("result %+v", res)
			}
			if got := read(t, s, tc.path); !bytes.Equal(got, tc.data) {
				t.Errorf("read %d bytes back, want the %d streamed", len(got), len(tc.data))
			}
		})
	}
	checkStats(t, s)

	refused := []struct {
		name string
		req  store.PutRequest
		r    io.Reader
		size int64
		is   error
	}{
		{"HashMismatch", store.PutRequest{Path: "/s/bad", SHA256: Sum([]byte("other"))}, bytes.NewReader(big), -1, store.ErrHashMismatch},
		{"HashMismatchOfStoredContent", store.PutRequest{Path: "/s/bad", SHA256: Sum(big)}, bytes.NewReader(content(len(big), 9)), -1, store.ErrHashMismatch},
		{"Short", store.PutRequest{Path: "/s/bad"}, bytes.NewReader(big[:1000]), 1001, store.ErrUpload},
		{"Long", store.PutRequest{Path: "/s/bad"}, bytes.NewReader(big), 1000, store.ErrUpload},
		{"OverFileLimit", store.PutRequest{Path: "/s/bad"}, bytes.NewReader(content(8<<20+1, 3)), -1, store.ErrLimit},
		{"AnnouncedOverFileLimit", store.PutRequest{Path: "/s/bad"}, bytes.NewReader(nil), 8<<20 + 1, store.ErrLimit},
		{"ReaderFails", store.PutRequest{Path: "/s/bad"}, failingReader{bytes.NewReader(content(3<<20, 4))}, -1, errBroken},
		{"ReaderFailsDeclared", store.PutRequest{Path: "/s/bad", SHA256: Sum(content(3<<20, 5))}, failingReader{bytes.NewReader(content(3<<20, 5))}, -1, errBroken},
		{"UnderAFile", store.PutRequest{Path: "/s/declared/below"}, bytes.NewReader([]byte("x")), -1, store.ErrConflict},
	}
	for _, tc := range refused {
		t.Run("Refused"+tc.name, func(t *testing.T) {
			check := refusal(t, s)
			_, err := st.PutStream(t.Context(), tc.req, tc.r, tc.size)
			if !errors.Is(err, tc.is) {
				t.Fatalf("PutStream: %v, want %v", err, tc.is)
			}
			check()
		})
	}
}

// streamFiles returns a next function for PutStreams that yields files
// /t/f0, /t/f1, ... with the given contents, then io.EOF; wrap, when not
// nil, turns the reader of file i into another.
func streamFiles(contents [][]byte, wrap func(i int, r io.Reader) io.Reader) func() (store.PutRequest, io.Reader, error) {
	i := 0
	return func() (store.PutRequest, io.Reader, error) {
		if i == len(contents) {
			return store.PutRequest{}, nil, io.EOF
		}
		var r io.Reader = bytes.NewReader(contents[i])
		if wrap != nil {
			r = wrap(i, r)
		}
		req := store.PutRequest{Path: fmt.Sprintf("/t/d%d/f%d", i%3, i)}
		i++
		return req, r, nil
	}
}

// testPutStreams checks store.Streamer.PutStreams: many files, one atomic
// change; any failure stores nothing.
func testPutStreams(t *testing.T, open Opener) {
	s := open(t, Config{BigContent: true})
	st, ok := s.(store.Streamer)
	if !ok {
		t.Skip("the store does not implement store.Streamer")
	}
	var contents [][]byte
	for i := range 40 {
		contents = append(contents, content(i*5000, byte(i)))
	}
	contents = append(contents, content(2<<20, 1), content(5000, 1)) // a large file; content seen before
	res, err := st.PutStreams(t.Context(), streamFiles(contents, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(contents) {
		t.Fatalf("%d results for %d files", len(res), len(contents))
	}
	for i, c := range contents {
		p := fmt.Sprintf("/t/d%d/f%d", i%3, i)
		if res[i].Entry.Path != p || res[i].Entry.SHA256 != Sum(c) || !bytes.Equal(read(t, s, p), c) {
			t.Errorf("file %d: %+v", i, res[i].Entry)
		}
	}
	checkStats(t, s)

	put(t, s, "/u/file", []byte("a file"))
	for _, tc := range []struct {
		name string
		next func() (store.PutRequest, io.Reader, error)
		is   error
	}{
		{"ReaderFails", streamFiles(contents, func(i int, r io.Reader) io.Reader {
			if i == 20 {
				return failingReader{r}
			}
			return r
		}), errBroken},
		{"NextFails", func() func() (store.PutRequest, io.Reader, error) {
			n := streamFiles(contents[:5], nil)
			return func() (store.PutRequest, io.Reader, error) {
				req, r, err := n()
				if errors.Is(err, io.EOF) {
					return req, r, errBroken
				}
				return req, r, err
			}
		}(), errBroken},
		{"Conflict", func() func() (store.PutRequest, io.Reader, error) {
			n := streamFiles(contents[:5], nil)
			i := 0
			return func() (store.PutRequest, io.Reader, error) {
				req, r, err := n()
				if i++; i == 4 {
					req.Path = "/u/file/below"
				}
				return req, r, err
			}
		}(), store.ErrConflict},
	} {
		t.Run("Refused"+tc.name, func(t *testing.T) {
			check := refusal(t, s)
			_, err := st.PutStreams(t.Context(), tc.next)
			if !errors.Is(err, tc.is) {
				t.Fatalf("PutStreams: %v, want %v", err, tc.is)
			}
			check()
		})
	}
	var be *store.BatchError
	_, err = st.PutStreams(t.Context(), func() func() (store.PutRequest, io.Reader, error) {
		n := streamFiles(contents[:5], nil)
		i := 0
		return func() (store.PutRequest, io.Reader, error) {
			req, r, err := n()
			if i++; i == 4 {
				req.Path = "/u/file/below"
			}
			return req, r, err
		}
	}())
	if !errors.As(err, &be) || be.Index != 3 || be.Path != "/u/file/below" {
		t.Errorf("PutStreams with a conflict at file 3: %v, want a *store.BatchError naming it", err)
	}
}
