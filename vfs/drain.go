package vfs

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// ErrnoShuttingDown is the errno an open gets once the mount is draining
// (Server.RefuseOpens): depotfs is stopping and takes no new readers.
const ErrnoShuttingDown = syscall.ESHUTDOWN

// opens counts the files open (or being opened) in the mount, and refuses
// new ones once a shutdown has begun.
type opens struct {
	n      atomic.Int64
	refuse atomic.Bool
}

// countedFS counts the files open in the mount, so a shutdown can let
// their readers finish (Server.WaitClosed) before it unmounts, and refuses
// new opens once RefuseOpens was called.
type countedFS struct {
	fuse.RawFileSystem
	opens *opens
}

func (c *countedFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	// Counted before the check: an open that sees refuse unset is
	// already counted when RefuseOpens returns, so WaitClosed waits for
	// it (an open blocked on a fetch included).
	c.opens.n.Add(1)
	if c.opens.refuse.Load() {
		c.opens.n.Add(-1)
		return fuse.Status(ErrnoShuttingDown)
	}
	st := c.RawFileSystem.Open(cancel, in, out)
	if !st.Ok() {
		c.opens.n.Add(-1)
	}
	return st
}

func (c *countedFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	c.RawFileSystem.Release(cancel, in)
	c.opens.n.Add(-1)
}

// drainPoll is how often WaitClosed looks at the count.
const drainPoll = 20 * time.Millisecond

// OpenFiles returns how many files are open (or being opened) in the mount
// now.
func (m *Server) OpenFiles() int64 { return m.opens.n.Load() }

// RefuseOpens makes every later open of a file in the mount fail with
// ErrnoShuttingDown (ESHUTDOWN); files already open, and opens already
// under way, are unaffected and can be read to their end. Lookups, stat
// and directory listings keep working. depotfs calls it as soon as a
// shutdown begins, then WaitClosed. It cannot be undone; it is idempotent
// and safe for concurrent use.
func (m *Server) RefuseOpens() { m.opens.refuse.Store(true) }

// WaitClosed returns nil once no file is open in the mount, or an error
// saying how many still are when ctx ends first. depotfs calls it between
// stopping its calls and Unmount, so a program reading a file when SIGTERM
// arrives reads it to its end (within --shutdown-timeout) instead of
// getting ENOTCONN. Files opened meanwhile count too, unless RefuseOpens
// was called first. It is safe for concurrent use.
func (m *Server) WaitClosed(ctx context.Context) error {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for {
		n := m.opens.n.Load()
		if n <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("vfs: %d file(s) still open in %s: %w", n, m.dir, ctx.Err())
		case <-m.served:
			return nil // unmounted from outside
		case <-t.C:
		}
	}
}
