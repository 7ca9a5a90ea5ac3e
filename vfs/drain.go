package vfs

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// countedFS counts the files open in the mount, so a shutdown can let
// their readers finish (Server.WaitClosed) before it unmounts.
type countedFS struct {
	fuse.RawFileSystem
	open *atomic.Int64
}

func (c *countedFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	st := c.RawFileSystem.Open(cancel, in, out)
	if st.Ok() {
		c.open.Add(1)
	}
	return st
}

func (c *countedFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	c.RawFileSystem.Release(cancel, in)
	c.open.Add(-1)
}

// drainPoll is how often WaitClosed looks at the count.
const drainPoll = 20 * time.Millisecond

// OpenFiles returns how many files are open in the mount now.
func (m *Server) OpenFiles() int64 { return m.open.Load() }

// WaitClosed returns nil once no file is open in the mount, or an error
// saying how many still are when ctx ends first. depotfs calls it between
// stopping its calls and Unmount, so a program reading a file when SIGTERM
// arrives reads it to its end (within --shutdown-timeout) instead of
// getting ENOTCONN. Files opened meanwhile count too. It is safe for
// concurrent use.
func (m *Server) WaitClosed(ctx context.Context) error {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for {
		n := m.open.Load()
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
