package seal

import (
	"log/slog"
	"sync"
	"sync/atomic"
)

// maxLogged bounds the places a Tally remembers having logged, so that a
// disk full of flipped bytes cannot grow its memory without end; past it,
// failures are still counted, and logged again.
const maxLogged = 4096

// Tally counts the sealed chunks that failed to open and logs each place
// once: a reader retrying a damaged chunk (the kernel retries a failed
// read; an agent calls the tool again) adds to the count without adding a
// log line each time. The zero value is not usable; make one with
// NewTally. It is safe for concurrent use.
type Tally struct {
	n   atomic.Uint64
	log *slog.Logger

	mu     sync.Mutex
	logged map[string]struct{}
}

// NewTally returns a Tally that logs to log.
func NewTally(log *slog.Logger) *Tally {
	return &Tally{log: log, logged: make(map[string]struct{})}
}

// Failed records a chunk at place (what the store names it by) that failed
// with err, and logs it unless that place was logged before.
func (t *Tally) Failed(place string, err error) {
	t.n.Add(1)
	t.mu.Lock()
	_, seen := t.logged[place]
	if !seen {
		if len(t.logged) >= maxLogged {
			clear(t.logged)
		}
		t.logged[place] = struct{}{}
	}
	t.mu.Unlock()
	if !seen {
		t.log.Error("sealed content failed authentication: the chunk is damaged or was changed on disk; it is never served (EIO on the mount and NFS, an error to tools, 500 over HTTP)", "chunk", place, "err", err)
	}
}

// Count is how many chunk opens failed since the Tally was made.
func (t *Tally) Count() uint64 { return t.n.Load() }
