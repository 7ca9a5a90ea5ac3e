package fstools

import "sync"

// pathLocks serializes operations on one depot path within this server,
// so that read-modify-write operations (append) queue instead of racing
// each other's revision checks. It is safe for concurrent use; a path's
// lock is freed when its last holder or waiter leaves, so the map holds
// only the paths in use.
type pathLocks struct {
	mu    sync.Mutex
	locks map[string]*pathLock
}

// pathLock is one path's lock and how many callers hold or wait for it.
type pathLock struct {
	sync.Mutex
	refs int
}

// lock takes p's lock and returns the function that releases it.
func (l *pathLocks) lock(p string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*pathLock{}
	}
	pl := l.locks[p]
	if pl == nil {
		pl = &pathLock{}
		l.locks[p] = pl
	}
	pl.refs++
	l.mu.Unlock()

	pl.Lock()
	return func() {
		pl.Unlock()
		l.mu.Lock()
		if pl.refs--; pl.refs == 0 {
			delete(l.locks, p)
		}
		l.mu.Unlock()
	}
}
