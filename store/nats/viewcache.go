package nats

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
	"github.com/nats-io/nats.go/jetstream"
)

// The view cache. A host keeps its view of the tree (the state, as of a
// stream sequence R) in a local file, Options.ViewCache, written now and
// then while it serves and when it closes. At start it loads the file
// and reads only the stream's messages after R, rather than every
// message of the bucket: at a million files the servers alone took 55 s
// to deliver the whole bucket. The file is a cache: a host that cannot
// use it (none, torn, another build's, another depot's, a stream that no
// longer holds what followed R) reads the whole bucket, as without one.
//
// Why starting after R gives the state a full read gives: the bucket
// keeps the newest message of each key, so every key changed after R has
// a message after R (its new value or its delete marker), and a key not
// changed since holds the value the state had at R. That fails only when
// messages after R were removed without a successor: the stream was
// purged or made again (its creation time differs), or its first
// sequence is past R+1. Then the file is not used.
//
// Not kept: inline content (the chunk cache fills again on reads), and the
// ids of transactions applied before R (only a host settling its own
// unconfirmed commit asks for them, and a restarted host has none). The
// change log's records up to R are read from the bucket at start (at most
// History keys), as a full read would have read them.
//
// A depot sealed with a key keeps no view cache: the file would hold, in
// the clear on the host's disk, the paths and content hashes the servers
// hold only enciphered.

// viewCacheMagic starts a view cache file; its number is the format's
// version: a file of another version (another build) is not used.
const viewCacheMagic = "depotfs nats view cache 1\n"

// viewCacheBatch is how many items of one kind each gob value holds.
const viewCacheBatch = 4096

// How often a serving host writes its view cache: when its view moved
// since the last write, at most every viewCacheEvery, and no more often
// than viewCacheSpacing times the last write's duration (a host of
// millions of files spends at most a few percent of a core on it).
const (
	viewCacheEvery   = time.Minute
	viewCacheCheck   = 5 * time.Second
	viewCacheSpacing = 30
)

// viewCacheHeader is the first value of a view cache file: what it was
// taken of, and how many items of each kind follow.
type viewCacheHeader struct {
	Prefix string
	// Stream is the tree stream's creation time: a stream made again
	// under the name is another depot, whatever its id.
	Stream   time.Time
	Depot    string
	Rev      uint64 // R: the stream sequence the view had applied
	EntryRev uint64
	ChangeN  uint64
	Uses     uint64 // the uses sequence
	RootTime time.Time
	Counters counters

	Entries, Blobs, GCs, Uploads, Versions, Snapshots, DirTimes int
}

type cachedBlob struct {
	Sum  string
	Blob blobRecord
	Use  uint64 // its last use on this host (uses), 0 for none
}

type cachedGC struct {
	Key, Sum string
	At       time.Time
}

type cachedUpload struct {
	Key    string
	Upload uploadRecord
}

type cachedVersion struct {
	Key     string
	Version rules.Version
}

type cachedSnapshot struct {
	Key      string
	Snapshot store.Snapshot
}

type cachedDirTime struct {
	Key     string
	DirTime rules.DirTime
}

// viewCopy is what a view cache file is written from: taken under the
// view's read lock, encoded after it. Records in the state are never
// changed in place (an apply replaces them), so the pointers stay valid.
type viewCopy struct {
	hdr      viewCacheHeader
	entries  []*record
	sums     []string
	blobs    []*blobRecord
	gcs      []cachedGC
	uploads  []cachedUpload
	versions []cachedVersion
	snaps    []cachedSnapshot
	dirTimes []cachedDirTime
}

// copyView takes what the view cache holds, or nil while the view has not
// read the tree or stopped at a message it could not apply.
func (s *Store) copyView() *viewCopy {
	v := &s.view
	v.mu.RLock()
	defer v.mu.RUnlock()
	st := v.st
	if !v.opened || v.applyErr != nil {
		return nil
	}
	c := &viewCopy{hdr: viewCacheHeader{
		Prefix: s.opts.Prefix, Stream: s.treeCreated, Depot: st.depot,
		Rev: st.rev, EntryRev: st.entryRev, ChangeN: st.changeN,
		RootTime: st.rootTime, Counters: st.counters,
	}}
	c.entries = make([]*record, 0, len(st.entries))
	for _, r := range st.entries {
		c.entries = append(c.entries, r)
	}
	c.sums = make([]string, 0, len(st.blobs))
	c.blobs = make([]*blobRecord, 0, len(st.blobs))
	for sum, b := range st.blobs {
		c.sums, c.blobs = append(c.sums, sum), append(c.blobs, b)
	}
	for k, g := range st.gcs {
		c.gcs = append(c.gcs, cachedGC{Key: k, Sum: g.sum, At: g.At})
	}
	for k, u := range st.uploads {
		c.uploads = append(c.uploads, cachedUpload{Key: k, Upload: *u})
	}
	for k, ver := range st.vkeys {
		c.versions = append(c.versions, cachedVersion{Key: k, Version: *ver})
	}
	for k, name := range st.snapNames {
		c.snaps = append(c.snaps, cachedSnapshot{Key: k, Snapshot: st.snaps[name]})
	}
	for k, d := range st.dtKeys {
		c.dirTimes = append(c.dirTimes, cachedDirTime{Key: k, DirTime: d})
	}
	h := &c.hdr
	h.Entries, h.Blobs, h.GCs, h.Uploads = len(c.entries), len(c.blobs), len(c.gcs), len(c.uploads)
	h.Versions, h.Snapshots, h.DirTimes = len(c.versions), len(c.snaps), len(c.dirTimes)
	return c
}

// writeViewCache writes this host's view to Options.ViewCache, replacing
// the file whole (a temporary file, synced, then renamed over it), and
// returns the stream sequence it holds; 0 when there was nothing to write.
func (s *Store) writeViewCache() (uint64, error) {
	if s.viewCache == "" {
		return 0, nil
	}
	s.viewCacheMu.Lock()
	defer s.viewCacheMu.Unlock()
	c := s.copyView()
	if c == nil {
		return 0, nil
	}
	var uses []uint64
	c.hdr.Uses, uses = s.uses.orders(c.sums)
	dir, base := filepath.Split(s.viewCache)
	f, err := os.CreateTemp(dir, base+".tmp*")
	if err != nil {
		return 0, fmt.Errorf("view cache: %w", err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	sum := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	bw := bufio.NewWriterSize(io.MultiWriter(f, sum), 1<<20)
	if err := c.encode(bw, uses); err != nil {
		return 0, fmt.Errorf("view cache %s: %w", f.Name(), err)
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("view cache %s: %w", f.Name(), err)
	}
	if _, err := f.Write(sum.Sum(nil)); err != nil {
		return 0, fmt.Errorf("view cache %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("view cache %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("view cache %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), s.viewCache); err != nil {
		return 0, fmt.Errorf("view cache: %w", err)
	}
	done = true
	if d, err := os.Open(filepath.Clean(dir + ".")); err == nil {
		d.Sync()
		d.Close()
	}
	return c.hdr.Rev, nil
}

// encode writes c after the magic line, each kind in batches; uses are
// the blobs' last uses, in the order of c.blobs.
func (c *viewCopy) encode(w io.Writer, uses []uint64) error {
	if _, err := io.WriteString(w, viewCacheMagic); err != nil {
		return err
	}
	enc := gob.NewEncoder(w)
	if err := enc.Encode(&c.hdr); err != nil {
		return err
	}
	batch := make([]record, 0, viewCacheBatch)
	for i, r := range c.entries {
		batch = append(batch, *r)
		if len(batch) == viewCacheBatch || i == len(c.entries)-1 {
			if err := enc.Encode(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	blobs := make([]cachedBlob, 0, viewCacheBatch)
	for i, b := range c.blobs {
		blobs = append(blobs, cachedBlob{Sum: c.sums[i], Blob: *b, Use: uses[i]})
		if len(blobs) == viewCacheBatch || i == len(c.blobs)-1 {
			if err := enc.Encode(blobs); err != nil {
				return err
			}
			blobs = blobs[:0]
		}
	}
	for _, v := range []any{c.gcs, c.uploads, c.versions, c.snaps, c.dirTimes} {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

// errViewCacheUnused says why a view cache file is not used.
var errViewCacheUnused = errors.New("not used")

// loadViewCache reads Options.ViewCache into a new state and makes it the
// view's, when it holds this depot's stream as it still is (info, read
// before the consumer starts). It returns the sequence the state holds,
// and 0 when the file was not used: the view then reads the whole bucket.
func (s *Store) loadViewCache(ctx context.Context, info *jetstream.StreamInfo) uint64 {
	if s.viewCache == "" {
		return 0
	}
	// A host killed while writing the file leaves its temporary file.
	if old, err := filepath.Glob(s.viewCache + ".tmp*"); err == nil {
		for _, f := range old {
			os.Remove(f)
		}
	}
	start := time.Now()
	st, uses, seq, err := s.readViewCache(info)
	var changes []rawChanges
	if err == nil {
		// A cluster electing a leader answers "no responders" for a
		// moment; the whole read the file would be given up for meets
		// the same, so the change log is asked again for a while first.
		rctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
		err = retry(rctx, func() error {
			var rerr error
			changes, rerr = s.readChangeLog(rctx, st.rev)
			return rerr
		})
		cancel()
	}
	if err != nil {
		level := s.log.Info
		if !errors.Is(err, os.ErrNotExist) {
			level = s.log.Warn
		}
		level("nats: this host reads the whole tree: its view cache is not used", "file", s.viewCache, "err", err)
		return 0
	}
	v := &s.view
	v.mu.Lock()
	v.st = st
	v.from = st.entryRev
	v.replay = changes
	v.open()
	v.mu.Unlock()
	s.uses.restore(uses, seq)
	s.loadedFrom = st.rev
	s.log.Info("nats: loaded this host's view cache; reading the tree from its sequence", "file", s.viewCache,
		"sequence", st.rev, "last", info.State.LastSeq, "files", st.counts.Files, "took", time.Since(start).Round(time.Millisecond))
	return st.rev
}

// readViewCache reads the view cache file after checking it whole (its
// checksum) and checking it was taken of this depot's stream, which still
// holds every message after it.
// It returns the state, the blobs' last uses and the uses sequence.
func (s *Store) readViewCache(info *jetstream.StreamInfo) (*state, map[string]uint64, uint64, error) {
	f, err := os.Open(s.viewCache)
	if err != nil {
		return nil, nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, 0, err
	}
	size := fi.Size() - crc32.Size
	if size < int64(len(viewCacheMagic)) {
		return nil, nil, 0, fmt.Errorf("%w: %d bytes, too short", errViewCacheUnused, fi.Size())
	}
	sum := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	if err := checked(f, size, sum); err != nil {
		return nil, nil, 0, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, nil, 0, err
	}
	r := bufio.NewReaderSize(io.LimitReader(f, size), 1<<20)
	magic := make([]byte, len(viewCacheMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != viewCacheMagic {
		return nil, nil, 0, fmt.Errorf("%w: another format (another build wrote it)", errViewCacheUnused)
	}
	dec := gob.NewDecoder(r)
	var h viewCacheHeader
	if err := dec.Decode(&h); err != nil {
		return nil, nil, 0, fmt.Errorf("%w: header: %w", errViewCacheUnused, err)
	}
	if err := s.matches(&h, info); err != nil {
		return nil, nil, 0, err
	}
	st := s.view.fresh(h.Entries, h.Blobs)
	uses, err := h.decode(dec, st)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%w: %w", errViewCacheUnused, err)
	}
	return st, uses, h.Uses, nil
}

// checked reads the first size bytes of f through sum and compares the
// checksum that follows them.
func checked(f *os.File, size int64, sum hash.Hash32) error {
	if _, err := io.Copy(sum, io.LimitReader(f, size)); err != nil {
		return err
	}
	var want [crc32.Size]byte
	if _, err := io.ReadFull(f, want[:]); err != nil {
		return err
	}
	if binary.BigEndian.Uint32(want[:]) != sum.Sum32() {
		return fmt.Errorf("%w: its checksum does not match (a torn or damaged file)", errViewCacheUnused)
	}
	return nil
}

// matches checks that a view cache's header h was taken of the stream
// info describes, and that the stream still holds whatever followed it.
func (s *Store) matches(h *viewCacheHeader, info *jetstream.StreamInfo) error {
	switch {
	case h.Prefix != s.opts.Prefix:
		return fmt.Errorf("%w: taken of prefix %q", errViewCacheUnused, h.Prefix)
	case !h.Stream.Equal(info.Created):
		return fmt.Errorf("%w: taken of a tree stream created %v, the cluster's was created %v (another depot)", errViewCacheUnused, h.Stream, info.Created)
	case s.opts.Depot != "" && h.Depot != s.opts.Depot:
		return fmt.Errorf("%w: taken of depot %s, this host serves %s", errViewCacheUnused, h.Depot, s.opts.Depot)
	case info.State.Msgs == 0:
		return fmt.Errorf("%w: the stream holds no message", errViewCacheUnused)
	case h.Rev == 0:
		return fmt.Errorf("%w: taken before the view read anything", errViewCacheUnused)
	case h.Rev > info.State.LastSeq:
		return fmt.Errorf("%w: taken at sequence %d, past the stream's last, %d", errViewCacheUnused, h.Rev, info.State.LastSeq)
	case info.State.FirstSeq > h.Rev+1:
		return fmt.Errorf("%w: taken at sequence %d, the stream starts at %d (what followed it may be gone)", errViewCacheUnused, h.Rev, info.State.FirstSeq)
	}
	return nil
}

// fresh returns an empty state set up as the view's (same quotas, chunk
// cache and addresses), with room for entries and blobs.
func (v *view) fresh(entries, blobs int) *state {
	v.mu.RLock()
	defer v.mu.RUnlock()
	st := newStateFor(entries, blobs)
	st.quota, st.charged = v.st.quota, v.st.quota.Zero()
	st.cache, st.addr = v.st.cache, v.st.addr
	return st
}

// decode reads the items h announces into st, through the functions an
// apply uses, so that every index and count is derived as it is there. It
// returns the blobs' last uses.
func (h *viewCacheHeader) decode(dec *gob.Decoder, st *state) (map[string]uint64, error) {
	st.rev, st.entryRev, st.changeN = h.Rev, h.EntryRev, h.ChangeN
	st.depot, st.rootTime, st.counters = h.Depot, h.RootTime, h.Counters
	// One goroutine decodes while this one applies: each takes about
	// half of a load's time, and a host has the cores to spare at start.
	entries, blobs := make(chan []record, 2), make(chan []cachedBlob, 2)
	decoded, stop := make(chan error, 1), make(chan struct{})
	defer close(stop)
	go func() { decoded <- h.decodeBulk(dec, entries, blobs, stop) }()
	writers := map[string]string{}
	for batch := range entries {
		for i := range batch {
			r := &batch[i]
			if st.entries[r.Path] != nil {
				return nil, fmt.Errorf("entry %s twice", r.Path)
			}
			// Most entries share a handful of writers.
			if w, ok := writers[r.Writer]; ok {
				r.Writer = w
			} else if len(writers) < 1024 {
				writers[r.Writer] = r.Writer
			}
			st.setEntry(r.Path, r)
		}
	}
	uses := make(map[string]uint64, h.Blobs)
	for batch := range blobs {
		for i := range batch {
			b := &batch[i]
			st.setBlob(b.Sum, &b.Blob)
			if b.Use > 0 {
				uses[b.Sum] = b.Use
			}
		}
	}
	if err := <-decoded; err != nil {
		return nil, err
	}
	var gcs []cachedGC
	var uploads []cachedUpload
	var versions []cachedVersion
	var snaps []cachedSnapshot
	var dirTimes []cachedDirTime
	for _, p := range []any{&gcs, &uploads, &versions, &snaps, &dirTimes} {
		if err := dec.Decode(p); err != nil {
			return nil, err
		}
	}
	if len(gcs) != h.GCs || len(uploads) != h.Uploads || len(versions) != h.Versions || len(snaps) != h.Snapshots || len(dirTimes) != h.DirTimes {
		return nil, errors.New("counts differ from the header's")
	}
	for _, g := range gcs {
		st.gcs[g.Key] = &gcRecord{At: g.At, sum: g.Sum}
	}
	for i := range uploads {
		st.setUpload(uploads[i].Key, &uploads[i].Upload)
	}
	for i := range versions {
		st.addVersion(versions[i].Key, &versions[i].Version)
	}
	for _, sn := range snaps {
		st.addSnapshot(sn.Key, sn.Snapshot)
	}
	for _, d := range dirTimes {
		st.addDirTime(d.Key, d.DirTime)
	}
	if int64(len(st.entries)) != int64(h.Entries) {
		return nil, errors.New("entry count differs from the header's")
	}
	return uses, nil
}

// decodeBulk decodes the entries and blobs h announces from dec, in
// batches, and sends them on entries and blobs, closing each once sent
// whole or at the first error, which it returns; it returns early once
// stop is closed.
func (h *viewCacheHeader) decodeBulk(dec *gob.Decoder, entries chan<- []record, blobs chan<- []cachedBlob, stop <-chan struct{}) error {
	defer close(blobs)
	err := decodeBatches(dec, h.Entries, entries, stop)
	close(entries)
	if err != nil {
		return fmt.Errorf("entries: %w", err)
	}
	if err := decodeBatches(dec, h.Blobs, blobs, stop); err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	return nil
}

// decodeBatches decodes batches from dec until they hold n items, and
// sends each on out.
func decodeBatches[T any](dec *gob.Decoder, n int, out chan<- []T, stop <-chan struct{}) error {
	for n > 0 {
		var batch []T
		if err := dec.Decode(&batch); err != nil || len(batch) == 0 || len(batch) > n {
			return cmpErr(err)
		}
		n -= len(batch)
		select {
		case out <- batch:
		case <-stop:
			return errors.New("stopped")
		}
	}
	return nil
}

// cmpErr is err, or one saying a batch was empty or too long.
func cmpErr(err error) error {
	if err == nil {
		return errors.New("a batch empty or longer than announced")
	}
	return err
}

// viewCacher writes the view cache while the store serves (see
// viewCacheEvery); from is the sequence the file held at open, 0 for
// none.
func (s *Store) viewCacher(from uint64) {
	t := time.NewTicker(viewCacheCheck)
	defer t.Stop()
	wrote, last := from, time.Now()
	var took time.Duration
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if s.view.applied() == wrote || time.Since(last) < max(viewCacheEvery, viewCacheSpacing*took) {
			continue
		}
		start := time.Now()
		rev, err := s.writeViewCache()
		took, last = time.Since(start), time.Now()
		if err != nil {
			s.log.Warn("nats: writing this host's view cache", "err", err)
			continue
		}
		if rev > 0 {
			wrote = rev
		}
	}
}

// readChangeLog reads the change records the tree stream holds up to
// sequence upTo, as a full read of the bucket would have collected them
// for the hub (see replayed): at most History keys, read with their own
// consumer. Those after upTo come with the rest of the stream.
func (s *Store) readChangeLog(ctx context.Context, upTo uint64) ([]rawChanges, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	filter := s.subject("c.>")
	info, err := s.tree.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("change log: %w", err)
	}
	if len(info.State.Subjects) == 0 {
		return nil, nil
	}
	cons, err := s.tree.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return nil, fmt.Errorf("change log: %w", err)
	}
	var out []rawChanges
	for {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(s.opts.Timeout))
		if err != nil {
			return nil, fmt.Errorf("change log: %w", err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				return nil, fmt.Errorf("change log: %w", err)
			}
			if meta.Sequence.Stream > upTo {
				return out, nil
			}
			if key := keyOf(m.Subject()); m.Headers().Get(kvOperation) == "" {
				c, err := changeNumber(key, m.Data())
				if err != nil {
					return nil, err
				}
				out = append(out, rawChanges{n: c, key: key, data: m.Data()})
			}
			if meta.NumPending == 0 {
				return out, nil
			}
		}
		if err := batch.Error(); err != nil {
			return nil, fmt.Errorf("change log: %w", err)
		}
		if n == 0 {
			return nil, errors.New("change log: no record arrived")
		}
	}
}
