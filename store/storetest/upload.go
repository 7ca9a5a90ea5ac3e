package storetest

import (
	"bytes"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// split cuts data into n nearly equal chunks.
func split(data []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range n {
		out[i] = data[i*len(data)/n : (i+1)*len(data)/n]
	}
	return out
}

func chunk(id string, parts [][]byte, i int, file store.PutRequest) store.Chunk {
	return store.Chunk{UploadID: id, Index: i, Count: len(parts), Data: parts[i], File: file}
}

func testPutChunk(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("OutOfOrderWithRetry", func(t *testing.T) {
		s := open(t)
		data := pattern(250_000, 9)
		parts := split(data, 5)
		mtime := mustTime("2023-01-02T03:04:05Z")
		file := store.PutRequest{Path: "/up/big.bin", SHA256: Sum(data), Mode: 0o644, MTime: mtime, Writer: "agent", Encoding: "base64"}
		order := []int{3, 0, 4, 0, 1, 3}
		received := 0
		seen := map[int]bool{}
		var wantBytes int64
		for _, i := range order {
			c := chunk("u1", parts, i, file)
			if i == 3 {
				c.SHA256 = Sum(parts[i])
			}
			prog, err := s.PutChunk(t.Context(), c)
			if err != nil {
				t.Fatalf("chunk %d: %v", i, err)
			}
			if !seen[i] {
				seen[i] = true
				received++
				wantBytes += int64(len(parts[i]))
			}
			if prog.Complete || prog.Received != received || prog.Count != 5 || prog.UploadID != "u1" || prog.Path != file.Path || prog.Bytes != wantBytes ||
				prog.ChunkSHA256 != Sum(parts[i]) {
				t.Errorf("after chunk %d: %+v, want %d received, %d bytes", i, prog, received, wantBytes)
			}
			if _, err := s.Stat(t.Context(), file.Path); err == nil {
				t.Fatalf("the file is visible before its last chunk")
			}
		}
		prog, err := s.PutChunk(t.Context(), chunk("u1", parts, 2, file))
		if err != nil {
			t.Fatal(err)
		}
		if !prog.Complete || prog.Received != 5 || prog.Result.Status != store.StatusCreated || prog.ChunkSHA256 != Sum(parts[2]) {
			t.Fatalf("after the last chunk: %+v", prog)
		}
		e := prog.Result.Entry
		if e.SHA256 != Sum(data) || e.Size != int64(len(data)) || !e.MTime.Equal(mtime) || e.Mode != 0o644 || e.Writer != "agent" || e.Encoding != "base64" || !e.Present {
			t.Errorf("entry %+v", e)
		}
		if st := stat(t, s, file.Path); !sameEntry(st, e) {
			t.Errorf("Stat %+v, result %+v", st, e)
		}
		if got := read(t, s, file.Path); !bytes.Equal(got, data) {
			t.Error("uploaded content reads wrong")
		}
	})
	t.Run("SingleChunk", func(t *testing.T) {
		s := open(t)
		prog, err := s.PutChunk(t.Context(), store.Chunk{UploadID: "one", Count: 1, Data: []byte("tiny"), File: store.PutRequest{Path: "/t", SHA256: Sum([]byte("tiny"))}})
		if err != nil || !prog.Complete {
			t.Fatalf("%+v, %v", prog, err)
		}
		if got := read(t, s, "/t"); string(got) != "tiny" {
			t.Errorf("read %q", got)
		}
	})
	t.Run("EmptyFile", func(t *testing.T) {
		s := open(t)
		prog, err := s.PutChunk(t.Context(), store.Chunk{UploadID: "e", Count: 1, File: store.PutRequest{Path: "/e", SHA256: Sum(nil)}})
		if err != nil || !prog.Complete || prog.Result.Entry.Size != 0 {
			t.Fatalf("%+v, %v", prog, err)
		}
	})
	t.Run("Update", func(t *testing.T) {
		s := open(t)
		first := put(t, s, "/f", []byte("old"))
		data := pattern(10_000, 4)
		parts := split(data, 2)
		file := store.PutRequest{Path: "/f", SHA256: Sum(data), IfRevision: first.Entry.Revision}
		for i := range parts {
			prog, err := s.PutChunk(t.Context(), chunk("u", parts, i, file))
			if err != nil {
				t.Fatal(err)
			}
			if i == 1 && (prog.Result.Status != store.StatusUpdated || prog.Result.Entry.Updates != 1 || prog.Result.Entry.Ino != first.Entry.Ino) {
				t.Errorf("result %+v", prog.Result)
			}
		}
	})
	t.Run("WrongWholeHash", func(t *testing.T) {
		s := open(t)
		data := pattern(30_000, 5)
		parts := split(data, 3)
		file := store.PutRequest{Path: "/w", SHA256: Sum([]byte("something else"))}
		for i := range 2 {
			if _, err := s.PutChunk(t.Context(), chunk("w", parts, i, file)); err != nil {
				t.Fatal(err)
			}
		}
		before := snapshot(t, s)
		_, err := s.PutChunk(t.Context(), chunk("w", parts, 2, file))
		wantErr(t, "last chunk of a wrong hash", err, store.ErrHashMismatch)
		unchanged(t, s, before)
		// The upload was discarded: the same ID starts over.
		prog, err := s.PutChunk(t.Context(), chunk("w", parts, 0, store.PutRequest{Path: "/w", SHA256: Sum(data)}))
		if err != nil || prog.Received != 1 {
			t.Errorf("after a discarded upload, its ID starts over: %+v, %v", prog, err)
		}
	})
	t.Run("Rejected", func(t *testing.T) { testPutChunkRejected(t, open) })
	t.Run("PathTakenMeanwhile", func(t *testing.T) {
		s := open(t)
		data := pattern(2000, 6)
		parts := split(data, 2)
		file := store.PutRequest{Path: "/x/f", SHA256: Sum(data), IfAbsent: true}
		if _, err := s.PutChunk(t.Context(), chunk("m", parts, 0, file)); err != nil {
			t.Fatal(err)
		}
		put(t, s, "/x/f", []byte("first"))
		before := snapshot(t, s)
		_, err := s.PutChunk(t.Context(), chunk("m", parts, 1, file))
		wantErr(t, "completing over a path taken meanwhile", err, store.ErrExist)
		unchanged(t, s, before)
	})
}

func testPutChunkRejected(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	put(t, s, "/file", []byte("x"))
	put(t, s, "/dir/f", []byte("y"))
	data := pattern(40_000, 8)
	parts := split(data, 4)
	file := store.PutRequest{Path: "/up", SHA256: Sum(data)}
	if _, err := s.PutChunk(t.Context(), chunk("r", parts, 1, file)); err != nil {
		t.Fatal(err)
	}
	other := file
	other.Path = "/other"
	otherHash := file
	otherHash.SHA256 = Sum([]byte("x"))
	noHash := file
	noHash.SHA256 = ""
	badHash := file
	badHash.SHA256 = "ABC"
	for _, tt := range []struct {
		name string
		c    store.Chunk
		want error
	}{
		{"DifferentBytes", store.Chunk{UploadID: "r", Index: 1, Count: 4, Data: []byte("different"), File: file}, store.ErrUpload},
		{"IndexNegative", store.Chunk{UploadID: "r", Index: -1, Count: 4, Data: parts[0], File: file}, store.ErrUpload},
		{"IndexTooBig", store.Chunk{UploadID: "r", Index: 4, Count: 4, Data: parts[0], File: file}, store.ErrUpload},
		{"CountZero", store.Chunk{UploadID: "r", Index: 0, Count: 0, Data: parts[0], File: file}, store.ErrUpload},
		{"CountChanged", store.Chunk{UploadID: "r", Index: 0, Count: 5, Data: parts[0], File: file}, store.ErrUpload},
		{"PathChanged", store.Chunk{UploadID: "r", Index: 0, Count: 4, Data: parts[0], File: other}, store.ErrUpload},
		{"HashChanged", store.Chunk{UploadID: "r", Index: 0, Count: 4, Data: parts[0], File: otherHash}, store.ErrUpload},
		{"NoWholeHash", store.Chunk{UploadID: "n", Index: 0, Count: 4, Data: parts[0], File: noHash}, store.ErrUpload},
		{"BadWholeHash", store.Chunk{UploadID: "n", Index: 0, Count: 4, Data: parts[0], File: badHash}, store.ErrUpload},
		{"NoUploadID", store.Chunk{Index: 0, Count: 4, Data: parts[0], File: file}, store.ErrUpload},
		{"ChunkHash", store.Chunk{UploadID: "r", Index: 0, Count: 4, Data: parts[0], SHA256: Sum(parts[1]), File: file}, store.ErrHashMismatch},
		{"UnderFile", store.Chunk{UploadID: "c", Index: 0, Count: 1, Data: []byte("x"), File: store.PutRequest{Path: "/file/x", SHA256: Sum([]byte("x"))}}, store.ErrConflict},
		{"OverDir", store.Chunk{UploadID: "c", Index: 0, Count: 1, Data: []byte("x"), File: store.PutRequest{Path: "/dir", SHA256: Sum([]byte("x"))}}, store.ErrConflict},
		{"IfAbsent", store.Chunk{UploadID: "c", Index: 0, Count: 2, Data: []byte("x"), File: store.PutRequest{Path: "/file", SHA256: Sum([]byte("x")), IfAbsent: true}}, store.ErrExist},
		{"IfRevision", store.Chunk{UploadID: "c", Index: 0, Count: 2, Data: []byte("x"), File: store.PutRequest{Path: "/file", SHA256: Sum([]byte("x")), IfRevision: 1 << 40}}, store.ErrRevision},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, s)
			_, err := s.PutChunk(t.Context(), tt.c)
			wantErr(t, "PutChunk", err, tt.want)
			unchanged(t, s, before)
		})
	}
	// The upload is as it was: chunk 1 received, the rest still wanted.
	prog, err := s.PutChunk(t.Context(), chunk("r", parts, 1, file))
	if err != nil || prog.Received != 1 || prog.Bytes != int64(len(parts[1])) {
		t.Fatalf("retrying chunk 1 after rejected chunks: %+v, %v", prog, err)
	}
	for _, i := range []int{0, 2, 3} {
		if prog, err = s.PutChunk(t.Context(), chunk("r", parts, i, file)); err != nil {
			t.Fatal(err)
		}
	}
	if !prog.Complete {
		t.Fatalf("upload not complete: %+v", prog)
	}
	// The IDs of rejected first chunks never started an upload.
	prog, err = s.PutChunk(t.Context(), store.Chunk{UploadID: "c", Index: 0, Count: 2, Data: []byte("x"), File: store.PutRequest{Path: "/c", SHA256: Sum([]byte("xy"))}})
	if err != nil || prog.Received != 1 || prog.Path != "/c" {
		t.Fatalf("a rejected first chunk left an upload behind: %+v, %v", prog, err)
	}
}
