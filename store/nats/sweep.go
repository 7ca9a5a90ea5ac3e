package nats

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// expireBatch bounds the entries one expiry transaction removes.
const expireBatch = 200

// ExpireEntries removes the unpinned files whose expiry time has passed by
// the store's clock, with the implicit parents they leave empty, and
// returns how many files it removed; then the snapshots that expired, as
// DeleteSnapshot would. Every host's sweeper runs it each
// Options.SweepInterval; concurrent runs on several hosts remove each file
// once. It is safe for concurrent use.
func (s *Store) ExpireEntries(ctx context.Context) (int, error) {
	total := 0
	// A snapshot's release frees at most budget versions a commit,
	// halved when a commit is refused as too large.
	budget := rules.ReleaseBudget(s.limits())
	for {
		n, more := 0, false
		err := s.update(ctx, func(t *txn) error {
			n, more = 0, false
			var due []string
			for p, when := range t.st.expiring {
				if !when.After(t.now) {
					due = append(due, p)
				}
			}
			slices.Sort(due)
			if len(due) > expireBatch {
				due, more = due[:expireBatch], true
			}
			for _, p := range due {
				r := t.get(p)
				if r == nil || entryrec.Expires(r.rec()).IsZero() || r.Expires.After(t.now) {
					continue
				}
				if err := rules.Expire(t, p, r.rec()); err != nil {
					return err
				}
				n++
			}
			t.c.Expiries += int64(n)
			if more {
				return nil
			}
			_, err := rules.ExpireSnapshots(t, budget)
			return err
		}, nil)
		if errors.Is(err, store.ErrBatchLimit) && !more && budget > 1 {
			budget /= 2
			continue
		}
		if err != nil {
			return total, err
		}
		total += n
		if !more {
			return total, nil
		}
	}
}

// ExpireUploads discards the chunked uploads idle for Options.UploadTimeout
// and returns how many. It is safe for concurrent use.
func (s *Store) ExpireUploads(ctx context.Context) (int, error) {
	now := s.now()
	var keys []string
	err := s.update(ctx, func(t *txn) error {
		keys = keys[:0]
		for k, u := range t.st.uploads {
			if now.Sub(u.Last) >= s.opts.UploadTimeout && len(keys) < expireBatch {
				keys = append(keys, k)
				t.setUpload(k, nil)
			}
		}
		return nil
	}, nil)
	if err != nil {
		return 0, err
	}
	for _, k := range keys {
		s.dropUpload(ctx, k)
	}
	return len(keys), nil
}

// collect deletes the chunks of content dropped more than Options.GCDelay
// ago, except content this host still reads, then their gc records.
func (s *Store) collect(ctx context.Context) error {
	now := s.now()
	type victim struct{ key, id, sum, gen string }
	var due []victim
	s.view.mu.RLock()
	for k, g := range s.view.st.gcs {
		id, gen := gcParts(k)
		if now.Sub(g.At) >= s.opts.GCDelay && !s.open.has(g.sum) && len(due) < expireBatch {
			due = append(due, victim{k, id, g.sum, gen})
		}
	}
	s.view.mu.RUnlock()
	if len(due) == 0 {
		return nil
	}
	for _, v := range due {
		if v.gen != genInline {
			if err := s.chunks.drop(ctx, v.id, v.gen); err != nil {
				return err
			}
		}
	}
	return s.update(ctx, func(t *txn) error {
		for _, v := range due {
			if t.st.gcs[v.key] == nil {
				continue
			}
			t.gcDone = append(t.gcDone, v.key)
			// Inline bytes go in the same batch, unless the content was
			// stored again meanwhile (the same bytes, by hash).
			if v.gen == genInline && t.blob(v.sum) == nil {
				t.gcData = append(t.gcData, v.id)
			}
		}
		return nil
	}, nil)
}

// expiryDue reports whether some file has expired.
func (s *Store) expiryDue() bool {
	now := s.now()
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	for _, when := range s.view.st.expiring {
		if !when.After(now) {
			return true
		}
	}
	return rules.SnapshotsDue(slices.Collect(maps.Values(s.view.st.snaps)), now)
}

// sweeper runs expiry, upload expiry, chunk collection and the sweep of
// leaked chunks until Close.
func (s *Store) sweeper() {
	t := time.NewTicker(s.opts.SweepInterval)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.done
		cancel()
	}()
	lastUploads, lastLeaks := time.Now(), time.Now()
	report := func(what string, err error) {
		if err != nil && !errors.Is(err, store.ErrClosed) && !errors.Is(err, context.Canceled) {
			s.log.Error("nats: "+what, "err", err)
		}
	}
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if s.expiryDue() {
			n, err := s.ExpireEntries(ctx)
			report("expiring entries", err)
			if n > 0 {
				s.log.Info("nats: removed expired entries", "count", n)
			}
		}
		report("deleting dropped content", s.collect(ctx))
		if time.Since(lastUploads) >= min(max(s.opts.UploadTimeout/4, time.Second), time.Minute) {
			lastUploads = time.Now()
			_, err := s.ExpireUploads(ctx)
			report("expiring uploads", err)
		}
		if time.Since(lastLeaks) >= min(max(s.opts.ChunkGrace/4, time.Minute), 15*time.Minute) {
			lastLeaks = time.Now()
			_, err := s.SweepChunks(ctx, time.Now().Add(-s.opts.ChunkGrace))
			report("deleting leaked chunks", err)
		}
	}
}
