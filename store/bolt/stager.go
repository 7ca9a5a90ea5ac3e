package bolt

import "context"

// stager writes the chunks of one stream's blob, batch after batch, each
// batch's transaction committing while the caller prepares the next (reads
// it from the network, or opens and reseals it): the disk's writes and
// flushes overlap the reading, hashing and sealing instead of taking
// turns. At most one transaction is in flight, so a stream holds two
// batches at most. It belongs to one goroutine; wait must be called
// before its result is used and before the caller returns.
type stager struct {
	s   *Store
	key hash // the blob whose chunks are written
	// bufs recycles the chunk buffers of committed batches.
	bufs chunkBufs
	// done delivers the result of the transaction in flight, nil when
	// none is; held are its chunks, which bbolt keeps until it commits.
	done chan stageResult
	held [][]byte
	// appeared is set once a transaction found that the blob got a record
	// meanwhile: the chunks of a blob with a record are never
	// overwritten, so the stream stops writing them.
	appeared bool
}

// newStager returns the stager of the chunks of blob key, with chunk
// buffers of chunk bytes (sealed, if the store seals).
func (s *Store) newStager(key hash, chunk int) *stager {
	return &stager{s: s, key: key, bufs: chunkBufs{size: chunk + s.sealer.overhead()}}
}

// start writes chunks, in their stored form (sealed if the store is), as
// the chunks first, first+1, ... of the blob, in a transaction that runs
// while the caller goes on; the caller first waits for the one before.
func (st *stager) start(ctx context.Context, first int64, chunks [][]byte) {
	st.done, st.held = make(chan stageResult, 1), chunks
	go func(ch chan<- stageResult) {
		appeared, err := st.s.stageChunks(ctx, st.key, first, chunks)
		ch <- stageResult{appeared, err}
	}(st.done)
}

// wait returns the error of the transaction in flight, if any, once it has
// ended, and recycles its chunks' buffers.
func (st *stager) wait() error {
	if st.done == nil {
		return nil
	}
	res := <-st.done
	st.done = nil
	st.bufs.put(st.held)
	st.held = nil
	if res.appeared {
		st.appeared = true
	}
	return res.err
}

// stageResult is how a staging transaction ended.
type stageResult struct {
	appeared bool // the blob got a record meanwhile: stop writing
	err      error
}

// stageChunks writes chunks, in their stored form, as the chunks first,
// first+1, ... of blob key, with the orphan mark that has the next Open
// delete them if no file comes to use them. When the blob has appeared
// meanwhile (a Put of the same content), it writes nothing and reports
// it: the chunks of a blob with a record are never overwritten.
func (s *Store) stageChunks(ctx context.Context, key hash, first int64, chunks [][]byte) (bool, error) {
	appeared := false
	err := s.update(ctx, func(w *wtx) error {
		_, ok, err := getBlob(w.blobs, key)
		if appeared = ok; ok || err != nil {
			return err
		}
		if err := w.orphan.Put(key[:], []byte{1}); err != nil {
			return err
		}
		for i, c := range chunks {
			if err := w.chunks.Put(chunkKey(key, first+int64(i)), c); err != nil {
				return err
			}
		}
		return nil
	})
	return appeared, err
}

// chunkBufs recycles chunk buffers: a large allocation costs the runtime a
// clearing pass over it besides the garbage collection, as much CPU time
// as sealing the chunk, so a stream reuses the buffers of the batches
// already committed instead of allocating one per chunk. It belongs to
// one goroutine.
type chunkBufs struct {
	size int // each buffer's capacity
	free [][]byte
}

// get returns a buffer of size bytes.
func (b *chunkBufs) get() []byte {
	if n := len(b.free); n > 0 {
		buf := b.free[n-1]
		b.free = b.free[:n-1]
		return buf[:b.size]
	}
	return make([]byte, b.size)
}

// put returns bufs, which nothing uses any longer, for reuse.
func (b *chunkBufs) put(bufs [][]byte) {
	for _, buf := range bufs {
		if cap(buf) == b.size {
			b.free = append(b.free, buf)
		}
	}
}
