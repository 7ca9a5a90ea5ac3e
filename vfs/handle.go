package vfs

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/store"
)

// lingerFor is how long a node keeps its content (its shared snapshot, or
// its blob file) after the last handle closes. An open that resolved the
// name before an update reaches the node after the update, sometimes
// after the kernel was told of it; a program that stat'ed the file first
// (unzip does, and trusts that size) must then read the version it
// stat'ed, as on a local filesystem. Kept content holds the store's copy
// of a replaced version only that long.
const lingerFor = 2 * time.Second

// shared is one content snapshot that the open fileHandles of a node
// share; it stays for lingerFor after the last closes. While it is there,
// an open that races an update can still read the node's own version from
// it (see fileNode.openOld). refs and closed are guarded by the node's mu.
type shared struct {
	store.Content
	refs   int32
	closed bool
}

// newHandle returns an open handle reading c, the content of version v,
// or nil (closing c) when the node no longer shows v. The handle shares
// the content open handles of v already hold, if any (c is then closed),
// else shares c with the handles to come.
func (f *fileNode) newHandle(v fileVersion, c store.Content) *fileHandle {
	f.mu.Lock()
	if !f.version.same(v) {
		f.mu.Unlock()
		c.Close()
		return nil
	}
	f.opened().opens++
	s, took := f.adoptLocked(c)
	f.mu.Unlock()
	if !took {
		c.Close()
	}
	return &fileHandle{node: f, path: v.path, s: s}
}

// adoptLocked returns the shared content for c with a reference taken: the
// one the node shares when it has c's bytes, else c, now shared. It
// reports whether it took c. f.mu must be held.
func (f *fileNode) adoptLocked(c store.Content) (s *shared, took bool) {
	o := f.opened()
	if s := o.shared; s != nil && s.SHA256() == c.SHA256() && s.Size() == c.Size() {
		s.refs++
		return s, false
	}
	// A shorter content (from before the node followed an append) stays
	// with the handles that hold it.
	o.shared = &shared{Content: c, refs: 1}
	return o.shared, true
}

// keep holds the content of e, the version a lookup is about to answer
// for the new node f, for lingerFor, as if a handle of it had just closed.
// A lookup that replaces an older node of the same name, or finds a file
// updated just now, calls it: the file is being updated, and the kernel
// may send an open of f after the store moved past e, with e's attributes
// already given to a program (unzip stats the file, then opens it and
// trusts that size). When the store has moved past e already, keep takes
// the newest version instead and returns it: the lookup answers that one.
// Call it before f is in the tree.
func (f *fileNode) keep(ctx context.Context, e store.Entry) store.Entry {
	if f.fsys.opts.Shared {
		return e // see openOld
	}
	for range openTries {
		v := newFileVersion(e)
		f.version = v
		if !v.present {
			return e
		}
		c, err := f.fsys.st.Open(ctx, e.Path)
		if err != nil {
			return e
		}
		if v.holds(c) {
			s := &shared{Content: c}
			f.opened().shared = s
			time.AfterFunc(lingerFor, func() { f.expire(s) })
			return e
		}
		c.Close()
		ne, err := f.fsys.st.Stat(ctx, e.Path)
		if err != nil || ne.IsDir() {
			return e
		}
		e = ne
	}
	f.version = newFileVersion(e)
	return e
}

// hold makes the node, already in the tree, keep the content of the
// version it shows for lingerFor from now, as keep does for a new node.
// Content the node holds already may be about to expire (its timer runs
// from an earlier close or keep), so it takes the content afresh; the
// older copy goes when its handles and timer are done with it. It
// reports false when the store no longer has that content (the node is
// outdated) or the node moved on meanwhile.
func (f *fileNode) hold(ctx context.Context) bool {
	v, _ := f.snapshot()
	if f.fsys.opts.Shared || !v.present {
		return true // see openOld; a placeholder's opens wait for content
	}
	c, err := f.fsys.st.Open(ctx, v.path)
	if err != nil {
		return false
	}
	if !v.holds(c) {
		c.Close()
		return false
	}
	f.mu.Lock()
	if !f.version.same(v) {
		f.mu.Unlock()
		c.Close()
		return false
	}
	s := &shared{Content: c}
	f.opened().shared = s
	f.mu.Unlock()
	time.AfterFunc(lingerFor, func() { f.expire(s) })
	return true
}

// shareHandle returns a handle on the content the open handles of version
// v share, or nil when none is open.
func (f *fileNode) shareHandle(v fileVersion) *fileHandle {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open == nil {
		return nil
	}
	s := f.open.shared
	if s == nil || !f.version.same(v) || !v.holds(s.Content) {
		return nil
	}
	s.refs++
	f.open.opens++
	return &fileHandle{node: f, path: v.path, s: s}
}

// drop releases one reference to s. The last closes it, after lingerFor
// when it is still the node's content.
func (f *fileNode) drop(s *shared) error {
	f.mu.Lock()
	s.refs--
	if s.refs > 0 {
		f.mu.Unlock()
		return nil
	}
	if f.open.shared == s {
		f.mu.Unlock()
		time.AfterFunc(lingerFor, func() { f.expire(s) })
		return nil
	}
	s.closed = true
	f.mu.Unlock()
	return s.Close()
}

// expire closes s unless a handle took it up again.
func (f *fileNode) expire(s *shared) {
	f.mu.Lock()
	if s.refs > 0 || s.closed {
		f.mu.Unlock()
		return
	}
	s.closed = true
	if f.open.shared == s {
		f.open.shared = nil
	}
	f.mu.Unlock()
	if err := s.Close(); err != nil {
		f.fsys.log.Debug("vfs: closing a file's content failed", "path", f.path(), "err", err)
	}
}

// fileHandle is an open file: a content snapshot (shared with the node's
// other handles) read one kernel-requested range at a time. When the node
// follows an append (see fileNode.follow), the handle moves on to the
// longer content on the first read past the end of its own, which starts
// with the same bytes. Read is safe for concurrent use
// (store.Content.ReadAt is); the kernel calls Release once, after every
// Read has returned.
type fileHandle struct {
	node *fileNode
	path string

	mu sync.RWMutex // guards s; held for reading during a ReadAt
	s  *shared
}

var (
	_ = (fs.FileReader)((*fileHandle)(nil))
	_ = (fs.FileReleaser)((*fileHandle)(nil))
)

// Read fills dest from offset off; short only at the end of the file.
func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, s, err := h.readAt(dest, off)
	if n < len(dest) && (err == nil || errors.Is(err, io.EOF)) && h.grow(ctx, s) {
		n, _, err = h.readAt(dest, off)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, h.node.fsys.errno("read", h.path, err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *fileHandle) readAt(dest []byte, off int64) (int, *shared, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n, err := h.s.ReadAt(dest, off)
	return n, h.s, err
}

// grow moves the handle from s to the node's content, when the node
// followed an append past s's end. It reports whether the content changed.
func (h *fileHandle) grow(ctx context.Context, s *shared) bool {
	v, _ := h.node.snapshot()
	if !v.present || v.size <= s.Size() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s != s {
		return true // another read did it
	}
	c, err := h.node.fsys.st.Open(ctx, h.path)
	if err != nil {
		return false
	}
	if !v.holds(c) {
		c.Close() // changed again since; the node's next version says how
		return false
	}
	h.node.mu.Lock()
	ns, took := h.node.adoptLocked(c)
	h.node.mu.Unlock()
	if !took {
		c.Close()
	}
	h.s = ns
	if err := h.node.drop(s); err != nil {
		h.node.fsys.log.Debug("vfs: closing a file's shorter content failed", "path", h.path, "err", err)
	}
	return true
}

// Release drops the handle's share of the content.
func (h *fileHandle) Release(context.Context) syscall.Errno {
	h.node.mu.Lock()
	h.node.open.opens--
	h.node.mu.Unlock()
	if err := h.node.drop(h.s); err != nil {
		return h.node.fsys.errno("release", h.path, err)
	}
	return 0
}
