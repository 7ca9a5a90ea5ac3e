package nfsserver

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	bbolt "go.etcd.io/bbolt"
)

// pathsBucket holds the handle table: a 16-byte path key to the path.
var pathsBucket = []byte("paths")

// Table sizes: how many recently used keys are remembered in memory, and
// how many new ones wait at most before being written (a write then waits
// for the flush instead of growing the queue).
const (
	tableCacheSize  = 1 << 16
	tableMaxPending = 1 << 14
	tableFlushEvery = 50 * time.Millisecond
)

// table maps the keys of handles to the paths they name, persistently: a
// handle given out before a restart resolves after it. It is its own small
// bbolt file beside the depot, not the depot's database: the NFS server
// reads the depot only through store.Store. Keys are written in batches a
// few milliseconds after they are first given out; a crash loses at most
// those, and their handles answer NFS3ERR_STALE afterwards (the client
// looks the name up again). Memory is bounded: tableCacheSize keys in an
// LRU and at most tableMaxPending waiting to be written.
//
// Safe for concurrent use. mu guards pending and writing; it is never held while
// writing the database; pending and writing are only read or written
// under it (flush swaps them).
type table struct {
	db    *bbolt.DB
	cache *lru.Cache[[16]byte, string]
	log   *slog.Logger

	mu      sync.Mutex
	pending map[[16]byte]string // given out, not yet being written
	writing map[[16]byte]string // being written by flush; nil otherwise
	flushed *sync.Cond          // signalled after each flush, under mu

	stop chan struct{}
	done chan struct{}
}

func openTable(path string, log *slog.Logger) (*table, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, NoFreelistSync: true})
	if err != nil {
		return nil, fmt.Errorf("nfs: handle table %s: %w", path, err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(pathsBucket)
		return err
	}); err != nil {
		return nil, errors.Join(fmt.Errorf("nfs: handle table %s: %w", path, err), db.Close())
	}
	cache, _ := lru.New[[16]byte, string](tableCacheSize)
	t := &table{db: db, cache: cache, log: log, pending: map[[16]byte]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	t.flushed = sync.NewCond(&t.mu)
	go t.run()
	return t, nil
}

// put records that key names p.
func (t *table) put(key [16]byte, p string) {
	if old, ok := t.cache.Get(key); ok && old == p {
		return
	}
	t.cache.Add(key, p)
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.pending) >= tableMaxPending {
		t.flushed.Wait()
	}
	t.pending[key] = p
}

// get returns the path key names.
func (t *table) get(key [16]byte) (string, bool) {
	if p, ok := t.cache.Get(key); ok {
		return p, true
	}
	t.mu.Lock()
	p, ok := t.pending[key]
	if !ok {
		p, ok = t.writing[key]
	}
	t.mu.Unlock()
	if ok {
		return p, true
	}
	_ = t.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(pathsBucket).Get(key[:]); v != nil {
			p, ok = string(v), true
		}
		return nil
	})
	if ok {
		t.cache.Add(key, p)
	}
	return p, ok
}

func (t *table) run() {
	defer close(t.done)
	tick := time.NewTicker(tableFlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			t.flush()
			return
		case <-tick.C:
			t.flush()
		}
	}
}

// flush writes the pending keys in one transaction. Until it is
// committed, get finds them in writing.
func (t *table) flush() {
	t.mu.Lock()
	if len(t.pending) == 0 {
		t.mu.Unlock()
		return
	}
	batch := t.pending
	t.pending, t.writing = map[[16]byte]string{}, batch
	t.mu.Unlock()
	err := t.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(pathsBucket)
		for k, p := range batch {
			if err := b.Put(k[:], []byte(p)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.log.Warn("nfs: handle table not written: those handles go stale at the next restart", "keys", len(batch), "err", err)
	}
	t.mu.Lock()
	t.writing = nil
	t.flushed.Broadcast()
	t.mu.Unlock()
}

// close writes what is pending and closes the file.
func (t *table) close() error {
	close(t.stop)
	<-t.done
	return t.db.Close()
}
