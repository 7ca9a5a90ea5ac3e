package bolt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

func TestExpireUploads(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s, _ := openTemp(t, &bolt.Options{UploadTimeout: time.Hour, Now: clk.Now})
	data := []byte("abcdef")
	file := store.PutRequest{Path: "/f", SHA256: storetest.Sum(data)}
	chunk := func(id string, i int) (store.UploadProgress, error) {
		return s.PutChunk(ctx, store.Chunk{UploadID: id, Index: i, Count: 3, Data: data[2*i : 2*i+2], File: file})
	}
	expire := func(want int) {
		t.Helper()
		n, err := s.ExpireUploads(ctx)
		if err != nil || n != want {
			t.Fatalf("ExpireUploads = %d, %v; want %d", n, err, want)
		}
	}
	if _, err := chunk("idle", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := chunk("active", 0); err != nil {
		t.Fatal(err)
	}
	clk.Advance(40 * time.Minute)
	expire(0)
	if _, err := chunk("active", 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * time.Minute)
	expire(1) // "idle": an hour without a chunk
	if st := stats(t, s); st.Uploads != 1 {
		t.Errorf("%+v, want the active upload kept", st)
	}
	prog, err := chunk("idle", 1)
	if err != nil || prog.Received != 1 {
		t.Errorf("a chunk for an expired upload starts a new one: %+v, %v", prog, err)
	}
	prog, err = chunk("active", 2)
	if err != nil || !prog.Complete {
		t.Fatalf("%+v, %v", prog, err)
	}
	// The completed upload is remembered, then forgotten like any other.
	clk.Advance(59 * time.Minute)
	expire(0)
	clk.Advance(time.Minute)
	expire(2)
	if st := stats(t, s); st.Uploads != 0 || st.Blobs != 1 {
		t.Errorf("%+v, want no upload and the file's blob", st)
	}
}

func TestCompletedUploadRetry(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, nil)
	data := []byte("0123456789")
	file := store.PutRequest{Path: "/f", SHA256: storetest.Sum(data), IfAbsent: true}
	var last store.UploadProgress
	for i := range 2 {
		var err error
		if last, err = s.PutChunk(ctx, store.Chunk{UploadID: "u", Index: i, Count: 2, Data: data[5*i : 5*i+5], File: file}); err != nil {
			t.Fatal(err)
		}
	}
	rev, _ := s.Revision(ctx)
	// The reply to the last chunk was lost; the agent sends it again.
	again, err := s.PutChunk(ctx, store.Chunk{UploadID: "u", Index: 1, Count: 2, Data: data[5:], File: file})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Complete || again.Result.Entry != last.Result.Entry || again.Received != 2 {
		t.Errorf("retry after completion: %+v\nwant %+v", again, last)
	}
	if r, _ := s.Revision(ctx); r != rev {
		t.Errorf("a retry after completion moved the revision from %d to %d", rev, r)
	}
	_, err = s.PutChunk(ctx, store.Chunk{UploadID: "u", Index: 0, Count: 2, Data: []byte("other"), File: file})
	if !errors.Is(err, store.ErrUpload) {
		t.Errorf("different bytes after completion: %v, want ErrUpload", err)
	}
}

// TestLargeUpload sends 2.5 MiB in 128 KiB chunks, out of order, with
// small blob chunks and staging transactions of 1 MiB (a depot's are 16
// MiB) so completion spans several of them: a depot's sizes, 20 MiB in
// 1 MiB chunks, showed nothing more.
func TestLargeUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("large upload")
	}
	ctx := context.Background()
	s, _ := openTemp(t, bolt.WithBatchBytes(bolt.Options{ChunkSize: 32 << 10}, 1<<20))
	data := make([]byte, 5<<19+12345)
	rand.Read(data)
	const part = 128 << 10
	count := (len(data) + part - 1) / part
	file := store.PutRequest{Path: "/big/file.bin", SHA256: storetest.Sum(data)}
	var prog store.UploadProgress
	for _, i := range mrand.Perm(count) {
		var err error
		prog, err = s.PutChunk(ctx, store.Chunk{UploadID: "big", Index: i, Count: count, Data: data[i*part : min((i+1)*part, len(data))], File: file})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !prog.Complete || prog.Result.Entry.Size != int64(len(data)) {
		t.Fatalf("%+v", prog)
	}
	if !bytes.Equal(readAll(t, s, file.Path), data) {
		t.Fatal("the upload reads wrong")
	}
	if st := stats(t, s); st.Chunks != (len(data)+32<<10-1)/(32<<10) || st.Orphans != 0 {
		t.Errorf("%+v", st)
	}
	// The same content again: no second copy.
	for i := range count {
		if _, err := s.PutChunk(ctx, store.Chunk{UploadID: "again", Index: i, Count: count, Data: data[i*part : min((i+1)*part, len(data))], File: store.PutRequest{Path: "/copy", SHA256: file.SHA256}}); err != nil {
			t.Fatal(err)
		}
	}
	if st := stats(t, s); st.Blobs != 1 {
		t.Errorf("%+v, want one blob for two copies", st)
	}
}

// TestConcurrentChunks sends every chunk of several uploads from its own
// goroutine, each twice.
func TestConcurrentChunks(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, &bolt.Options{ChunkSize: 100})
	const uploads, count = 3, 8
	var wg sync.WaitGroup
	errs := make(chan error, uploads*count*2)
	complete := make(chan string, uploads*count*2)
	for u := range uploads {
		data := bytes.Repeat([]byte{byte('a' + u)}, 1000+u)
		file := store.PutRequest{Path: fmt.Sprintf("/u%d", u), SHA256: storetest.Sum(data)}
		for i := range count * 2 {
			wg.Go(func() {
				idx := i % count
				d := data[idx*len(data)/count : (idx+1)*len(data)/count]
				prog, err := s.PutChunk(ctx, store.Chunk{UploadID: file.Path, Index: idx, Count: count, Data: d, File: file})
				if err != nil {
					errs <- err
					return
				}
				if prog.Complete {
					complete <- file.Path
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	close(complete)
	for err := range errs {
		t.Error(err)
	}
	done := map[string]bool{}
	for p := range complete {
		done[p] = true
	}
	if len(done) != uploads {
		t.Errorf("completed %v, want all %d uploads", done, uploads)
	}
	for u := range uploads {
		if got := readAll(t, s, fmt.Sprintf("/u%d", u)); !bytes.Equal(got, bytes.Repeat([]byte{byte('a' + u)}, 1000+u)) {
			t.Errorf("/u%d reads wrong", u)
		}
	}
}
