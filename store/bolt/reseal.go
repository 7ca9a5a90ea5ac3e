package bolt

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	bbolt "go.etcd.io/bbolt"
)

// Reencryption: Reencrypt, offline, gives the store a new data key and
// keeps the previous one (keySealPrev) with a progress key (keyResealing,
// the same phase byte and last key as keySealing); every Open with the key
// then accepts both data keys and starts the resealer, which rewrites the
// chunks still under the previous one in small transactions at a bounded
// rate, moving the progress key in the same commits, so a restart goes on
// where it stopped. The last transaction deletes both keys: from then on
// only the new data key opens content.
var (
	keySealPrev  = []byte("seal.prev")
	keyResealing = []byte("resealing")
)

// DefaultResealRate is the content the resealer rewrites per second when
// Options.ResealRate is 0: a bound on the background I/O a reencryption
// adds (each chunk is read and written once), well under what a disk
// serves, so that reads and writes of the depot go on beside it.
const DefaultResealRate = 32 << 20

// resealBatchBytes bounds the content one resealer transaction goes
// through, so that writers wait for it (it holds the write lock) for a few
// milliseconds at a time, not seconds. A lower rate takes smaller batches,
// about eight a second.
const resealBatchBytes = 4 << 20

// ErrResealing reports a Reencrypt of a store whose previous reencryption
// has not finished.
var ErrResealing = errors.New("the depot's content is still being reencrypted under its current data key: start serve with its key and let it finish (it logs \"reencryption finished\"), then rotate again")

// Reencrypt gives the sealed store at path, which no process may have open,
// a new data key wrapped by next, and rewraps its current data key under
// next too, so that next alone opens the store from then on; cur must be
// the key that wraps it now (it may be the same key as next). The content
// is not rewritten here: the next Open with next, read-write, reseals it
// in the background (see Options.ResealRate), accepting content under the
// previous data key until it is done, also across restarts. It returns
// the new record. A clear store fails with seal.ErrNotSealed, a cur other
// than its key with seal.ErrWrongKey, a store whose previous reencryption
// or sealing is unfinished with ErrResealing or ErrSealing; then the file
// is unchanged.
func Reencrypt(ctx context.Context, path string, cur, next seal.Wrapper) (seal.Record, error) {
	if _, err := os.Stat(path); err != nil {
		return seal.Record{}, fmt.Errorf("bolt: reencrypt: %w", err)
	}
	db, lock, err := openLocked(path, &bbolt.Options{Timeout: lockTimeout})
	if err != nil {
		return seal.Record{}, fmt.Errorf("bolt: reencrypt: %w", err)
	}
	defer lock.Close()
	var r seal.Record
	err = db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		switch {
		case meta == nil:
			return ErrNotDepot
		case meta.Get(keySeal) == nil:
			return seal.ErrNotSealed
		case meta.Get(keySealing) != nil:
			return ErrSealing
		case meta.Get(keyResealing) != nil:
			return ErrResealing
		}
		old, err := seal.ParseRecord(meta.Get(keySeal))
		if err != nil {
			return err
		}
		prev, err := seal.Rewrap(ctx, old, cur, next)
		if err != nil {
			return err
		}
		// The new data key keeps a keyed store's address key, so that
		// content keeps its addresses and records their sealed hashes.
		pk, err := seal.Open(ctx, next, prev)
		if err != nil {
			return err
		}
		if _, r, err = seal.Renew(ctx, next, pk); err != nil {
			return err
		}
		return errors.Join(meta.Put(keySeal, r.Marshal()), meta.Put(keySealPrev, prev.Marshal()),
			meta.Put(keyResealing, []byte{phaseBlobs}))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return seal.Record{}, fmt.Errorf("bolt: reencrypt %s: %w", path, err)
	}
	return r, nil
}

// Resealing reports whether a reencryption is in progress: content sealed
// under the previous data key is still being resealed.
func (s *Store) Resealing() bool {
	return s.sealer.st != nil && s.sealer.st.prev.Load() != nil
}

// resealer rewrites the chunks still sealed under the previous data key,
// one transaction of about resealBatchBytes at a time, pacing itself to
// Options.ResealRate, until none is left or the store closes.
func (s *Store) resealer() {
	rate := float64(cmp.Or(s.opts.ResealRate, DefaultResealRate))
	batch := int(min(resealBatchBytes, max(rate/8, 1)))
	s.log.Info("reencrypting the depot's content under its new data key in the background", "data_key", s.sealer.key.ID(), "bytes_per_second", int64(rate))
	var done int64
	started := time.Now()
	for {
		t := time.Now()
		n, bytesRead, finished, err := s.resealBatch(batch)
		switch {
		case errors.Is(err, store.ErrClosed):
			return
		case err != nil:
			// A chunk that fails under both keys stays as it is (reads
			// of it fail); the resealer stops rather than skip it, so the
			// previous key stays accepted and nothing is lost.
			s.log.Error("reencryption stopped: the previous data key stays in use until it completes at a later start", "err", err)
			return
		}
		done += n
		if finished {
			s.sealer.st.retired.Store(s.sealer.st.prev.Swap(nil))
			s.log.Info("reencryption finished: the previous data key is gone from the file (reads begun before keep it until the restart); run 'depotfs compact' offline to drop the old sealed pages from the file", "chunks", done, "took", time.Since(started).Round(time.Millisecond))
			return
		}
		wait := time.Duration(float64(bytesRead)/rate*float64(time.Second)) - time.Since(t)
		select {
		case <-s.done:
			return
		case <-time.After(max(wait, 0)):
		}
	}
}

// resealBatch reseals the blob chunks of about batch bytes after the
// progress key, or the next upload's, under the write lock; it returns how
// many chunks it went through, the bytes it rewrote, and whether it was the last batch (which deletes the previous key).
func (s *Store) resealBatch(batch int) (n int64, size int, finished bool, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed.Load() {
		return 0, 0, false, store.ErrClosed
	}
	sl := s.sealer
	rw := func(prefix string, ad, v []byte) ([]byte, bool, error) {
		p, current, err := sl.openAny(nil, prefix, ad, v)
		if err != nil || current {
			return nil, false, err
		}
		size += len(v)
		return sl.seal(prefix, ad, p), true, nil
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		pos := bytes.Clone(meta.Get(keyResealing))
		if pos == nil {
			finished = true
			return nil
		}
		var err error
		if pos[0] == phaseBlobs {
			pos, n, err = sealBlobBatch(tx, rw, pos, batch)
		} else {
			pos, n, err = sealUploadBatch(tx, rw, pos)
		}
		if err != nil {
			return err
		}
		if pos != nil {
			return meta.Put(keyResealing, pos)
		}
		finished = true
		return errors.Join(meta.Delete(keyResealing), meta.Delete(keySealPrev))
	})
	return n, size, finished, dbErr(err)
}
