// Package keylock serializes work per key: at most one holder of each key
// at a time, others waiting in line or giving up. Both stores use it for
// the chunks of one upload (and bolt for the streams of one content); it
// knows nothing of either.
package keylock

import (
	"context"
	"sync"
)

// Locks is a set of per-key locks. The zero value is ready to use and
// holds no key. It is safe for concurrent use.
type Locks struct {
	mu   sync.Mutex
	busy map[string]chan struct{} // closed when the holder unlocks
}

// Lock takes key, waiting while another holds it; it fails with ctx's
// error when ctx is done first, and then does not hold key.
func (l *Locks) Lock(ctx context.Context, key string) error {
	for {
		l.mu.Lock()
		ch, held := l.busy[key]
		if !held {
			l.take(key)
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TryLock takes key if nobody holds it, and reports whether it did.
func (l *Locks) TryLock(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, held := l.busy[key]; held {
		return false
	}
	l.take(key)
	return true
}

// Unlock releases key, which the caller holds, and wakes its waiters.
func (l *Locks) Unlock(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.busy[key])
	delete(l.busy, key)
}

// take marks key held; l.mu is held.
func (l *Locks) take(key string) {
	if l.busy == nil {
		l.busy = make(map[string]chan struct{})
	}
	l.busy[key] = make(chan struct{})
}
