package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// chunkStore holds content in a stream of chunk messages, one subject per
// chunk, and keeps a bounded cache of the chunks this host read. A
// chunk's subject names its content's id (its hash, or keyed address),
// the generation of its upload and its index, so its bytes never change:
// the cache needs no invalidation.
type chunkStore struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	name    string
	timeout time.Duration // bounds a request
	// writeTimeout bounds the resending of a chunk the servers did not
	// acknowledge: the time limit of every write (Options.WriteTimeout).
	writeTimeout time.Duration
	cache        chunkCache
	// key seals the chunks of a sealed depot (see sealing.go); nil in a
	// clear one. Set by Open before any chunk is read or written.
	key *seal.Key
	// tampered counts the sealed chunks that failed to open and logs each
	// once; set with key.
	tampered *seal.Tally
	// addr names content by keyed addresses when key came from a version
	// 2 seal record; set with key.
	addr addresses
}

// newChunks returns the chunk store of stream name, with its cache; create
// creates or binds the stream.
func newChunks(js jetstream.JetStream, name string, cacheBytes int64, timeout, writeTimeout time.Duration) *chunkStore {
	c := &chunkStore{js: js, name: name, timeout: timeout, writeTimeout: writeTimeout}
	c.cache.init(cacheBytes)
	return c
}

// create creates the chunk stream, or binds it when it exists.
func (c *chunkStore) create(ctx context.Context, replicas int) error {
	st, err := c.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              c.name,
		Description:       "depotfs content chunks",
		Subjects:          []string{c.name + ".>"},
		Storage:           jetstream.FileStorage,
		Replicas:          replicas,
		MaxMsgsPerSubject: 1,
		Discard:           jetstream.DiscardOld,
		// Any replica answers reads, during an election too; one that
		// has not stored a chunk yet is answered for by the leader (see
		// lastMsg).
		AllowDirect: true,
	})
	if err != nil {
		return fmt.Errorf("chunk stream: %w", err)
	}
	c.stream = st
	return nil
}

// blobSubject is the subject of chunk i of the content whose id
// (addresses.id) is id, generation gen.
func (c *chunkStore) blobSubject(id, gen string, i int64) string {
	return c.blobPrefix(id, gen) + "." + strconv.FormatInt(i, 10)
}

// blobPrefix is the subject prefix of the chunks of the content whose id
// is id, generation gen. Content streamed in (PutStream) is written
// before its hash is known: its generation starts with streamGen and its
// chunks are named by the generation alone.
func (c *chunkStore) blobPrefix(id, gen string) string {
	if sid, ok := strings.CutPrefix(gen, streamGen); ok {
		return c.name + ".s." + sid
	}
	return c.name + "." + id + "." + gen
}

// streamGen starts the generation of content stored by PutStream.
const streamGen = "s-"

// uploadSubject is the subject of part j of chunk i of an upload.
func (c *chunkStore) uploadSubject(ukey string, i, j int) string {
	return c.name + "." + ukey + "." + strconv.Itoa(i) + "." + strconv.Itoa(j)
}

// write stores data as chunks of chunkSize under subject(i) and returns
// the number of chunks once the servers acknowledged every one. Empty
// data is one empty chunk.
func (c *chunkStore) write(ctx context.Context, data []byte, chunkSize int, subject func(i int) string) (int, error) {
	w := c.writer(ctx, chunkSize, subject)
	if err := w.write(data); err != nil {
		w.abort()
		return 0, err
	}
	if err := w.close(); err != nil {
		return 0, err
	}
	return w.n, nil
}

// chunkWriter publishes a stream of bytes as chunks without waiting for
// each acknowledgement; close waits for all of them.
type chunkWriter struct {
	c         *chunkStore
	ctx       context.Context
	cancel    context.CancelFunc
	chunkSize int
	subject   func(i int) string
	buf       []byte
	n         int
	acks      []jetstream.PubAckFuture
}

func (c *chunkStore) writer(ctx context.Context, chunkSize int, subject func(i int) string) *chunkWriter {
	// No deadline for the whole: a stream may take long; each
	// acknowledgement and each resend has its own.
	ctx, cancel := context.WithCancel(ctx)
	return &chunkWriter{c: c, ctx: ctx, cancel: cancel, chunkSize: chunkSize, subject: subject, buf: make([]byte, 0, chunkSize)}
}

func (w *chunkWriter) write(p []byte) error {
	for len(p) > 0 {
		n := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf = w.buf[:len(w.buf)+n]
		p = p[n:]
		if len(w.buf) == w.chunkSize {
			if err := w.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *chunkWriter) flush() error {
	subject := w.subject(w.n)
	f, err := w.c.js.PublishAsync(subject, w.c.sealData(subject, w.buf))
	if err != nil {
		return fmt.Errorf("storing chunk %d: %w", w.n, err)
	}
	w.acks = append(w.acks, f)
	w.n++
	w.buf = make([]byte, 0, w.chunkSize)
	// Bound what waits for acknowledgement.
	if len(w.acks) >= 64 {
		if err := w.wait(); err != nil {
			return err
		}
	}
	return nil
}

func (w *chunkWriter) wait() error {
	for _, f := range w.acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			// A chunk is stored again by its subject, so sending it
			// again is always safe.
			if !transient(err) && !ambiguous(err) {
				return fmt.Errorf("storing chunk %s: %w", f.Msg().Subject, err)
			}
			if err := w.resend(f.Msg()); err != nil {
				return err
			}
		case <-w.ctx.Done():
			return fmt.Errorf("storing chunks: %w", w.ctx.Err())
		}
	}
	w.acks = w.acks[:0]
	return nil
}

// resend publishes m again until the servers acknowledge it, within the
// time limit of a write: a cluster that cannot store it by then makes it
// fail with store.ErrUnavailable.
func (w *chunkWriter) resend(m *nats.Msg) error {
	rctx, rcancel := context.WithTimeout(w.ctx, w.c.writeTimeout)
	defer rcancel()
	err := retry(rctx, func() error {
		ctx, cancel := context.WithTimeout(rctx, requestTimeout)
		defer cancel()
		_, err := w.c.js.PublishMsg(ctx, m)
		if err != nil && ambiguous(err) && rctx.Err() == nil {
			return fmt.Errorf("%w: %w", nats.ErrNoResponders, err)
		}
		return err
	})
	switch {
	case err != nil && (transient(err) || ambiguous(err)) && (w.ctx.Err() == nil || outOfTime(w.ctx)):
		return fmt.Errorf("%w: storing chunk %s: %w", store.ErrUnavailable, m.Subject, err)
	case err != nil:
		return fmt.Errorf("storing chunk %s: %w", m.Subject, err)
	}
	return nil
}

// close stores what is buffered and waits for every acknowledgement.
func (w *chunkWriter) close() error {
	defer w.cancel()
	if len(w.buf) > 0 || w.n == 0 {
		if err := w.flush(); err != nil {
			return err
		}
	}
	return w.wait()
}

func (w *chunkWriter) abort() { w.cancel() }

// errChunkMissing reports a chunk the stream does not hold.
var errChunkMissing = errors.New("chunk is missing")

// read returns the chunk at subject, from the cache when it holds it.
func (c *chunkStore) read(ctx context.Context, subject string) ([]byte, error) {
	if b, ok := c.cache.get(subject); ok {
		return b, nil
	}
	b, err := c.readUncached(ctx, subject)
	if err != nil {
		return nil, err
	}
	c.cache.add(subject, b)
	return b, nil
}

// readUncached returns the chunk at subject without caching it (upload
// chunks are read once).
func (c *chunkStore) readUncached(ctx context.Context, subject string) ([]byte, error) {
	b, err := lastMsg(ctx, c.js.Conn(), c.stream, subject, c.writeTimeout)
	if err != nil {
		return nil, err
	}
	return c.openData(subject, b)
}

// lastMsg returns the data of the last message on subject in st. Any
// replica answers first (a direct get, which needs no leader, so reads go
// on while the stream elects one); a replica that lacks the message may
// only lag, so then the stream's leader is asked, and only its "no such
// message" means the message is missing. Anything else is asked again
// until limit: a chunk or inline content the tree references exists, and
// with a quorum up some server answers within an election.
func lastMsg(ctx context.Context, nc *nats.Conn, st jetstream.Stream, subject string, limit time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var data []byte
	var last error
	wait := 20 * time.Millisecond
	for {
		var err error
		if data, err = directLast(ctx, st, subject); err == nil {
			return data, nil
		}
		if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, errNoDirect) {
			var found bool
			data, found, err = leaderLast(ctx, nc, st.CachedInfo().Config.Name, subject)
			switch {
			case err == nil && found:
				return data, nil
			case err == nil:
				return nil, fmt.Errorf("%s: %w", subject, errChunkMissing)
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reading %s: %w", subject, last)
		case <-time.After(wait):
		}
		wait = min(2*wait, maxBackoff)
	}
}

// errNoDirect reports a stream whose replicas do not answer direct gets
// (a chunk stream configured by an earlier version): its leader answers.
var errNoDirect = errors.New("the stream does not allow direct gets")

// directLast asks any replica of st for the last message on subject.
func directLast(ctx context.Context, st jetstream.Stream, subject string) ([]byte, error) {
	if !st.CachedInfo().Config.AllowDirect {
		return nil, errNoDirect
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	m, err := st.GetLastMsgForSubject(rctx, subject)
	if err != nil {
		return nil, err
	}
	return m.Data, nil
}

// leaderLast asks stream's leader for the last message on subject; found
// is false when the stream has none.
func leaderLast(ctx context.Context, nc *nats.Conn, stream, subject string) (data []byte, found bool, err error) {
	req, err := json.Marshal(map[string]any{"last_by_subj": subject})
	if err != nil {
		return nil, false, err
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := nc.RequestWithContext(rctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, false, fmt.Errorf("asking the leader of %s: %w", stream, err)
	}
	var r msgGetResponse
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return nil, false, fmt.Errorf("asking the leader of %s: unreadable answer: %w", stream, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrCode == errCodeNoMessage:
		return nil, false, nil
	case r.Error != nil:
		return nil, false, fmt.Errorf("asking the leader of %s: %s (code %d)", stream, r.Error.Description, r.Error.ErrCode)
	case r.Message == nil:
		return nil, false, fmt.Errorf("asking the leader of %s: an answer without a message", stream)
	}
	return r.Message.Data, true, nil
}

// inlineCacheKey is the cache key of content stored inline, by its id.
func inlineCacheKey(id string) string { return "inline." + id }

// inlineData returns the content whose id is id, stored inline in the
// tree bucket, from the cache (where every host puts it as it applies the tree) or the bucket.
// The cache holds it as stored, sealed in a sealed depot: it is opened on
// each read (at most the inline limit, 16 KiB by default).
func (s *Store) inlineData(ctx context.Context, id string) ([]byte, error) {
	b, ok := s.chunks.cache.get(inlineCacheKey(id))
	if !ok {
		var err error
		if b, err = lastMsg(ctx, s.nc, s.tree, s.subject(dataKey(id)), s.opts.WriteTimeout); err != nil {
			return nil, err
		}
		s.chunks.cache.add(inlineCacheKey(id), b)
	}
	return s.chunks.openData(dataKey(id), b)
}

// drop deletes the chunks of generation gen of the content whose id is
// id. Failures are only logged by callers: what is left is garbage, never
// referenced again.
func (c *chunkStore) drop(ctx context.Context, id, gen string) error {
	return c.purge(ctx, c.blobPrefix(id, gen)+".>")
}

func (c *chunkStore) purge(ctx context.Context, filter string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := c.stream.Purge(ctx, jetstream.WithPurgeSubject(filter)); err != nil {
		return fmt.Errorf("deleting chunks %s: %w", filter, err)
	}
	return nil
}

// chunkCache is an LRU cache of chunks bounded in bytes. It is safe for
// concurrent use.
type chunkCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	lru   *simplelru.LRU[string, []byte] // bounded by bytes here, not by its count
}

func (c *chunkCache) init(max int64) {
	c.max = max
	c.lru, _ = simplelru.NewLRU(math.MaxInt, func(_ string, b []byte) { c.bytes -= int64(len(b)) })
}

func (c *chunkCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(key)
}

func (c *chunkCache) add(key string, data []byte) {
	if int64(len(data)) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(key) {
		return
	}
	c.lru.Add(key, data)
	c.bytes += int64(len(data))
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
}
