package vfs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"

	"github.com/depotfs/depotfs/store"
)

// AppendCheckMax bounds the files whose updates are checked for being
// appends. An update that keeps a file's bytes and adds to them keeps the
// file's inode (tail -F prints only what was added) instead of looking like
// a rename-replace; telling the two apart reads the old size's worth of
// the new content, so a longer file is always replaced.
const AppendCheckMax = 16 << 20

// followed says what fileNode.follow did with a newer version of the file.
type followed uint8

const (
	// replaced: the node stays the older version; the newer one is
	// another inode.
	replaced followed = iota
	// kept: the node already shows that version, or a later one.
	kept
	// refreshed: the node now shows the newer version with the same
	// content (only metadata changed): nothing cached is stale.
	refreshed
	// grew: the newer version extends the node's content; pages before
	// the old end are still good.
	grew
	// retargeted: the node, open nowhere, now shows the newer version, a
	// different content: its cached pages and attributes are stale.
	retargeted
	// filled: the node, a placeholder, now shows the content that arrived
	// for it. A placeholder's node is the path's until its content exists:
	// a program that looked it up (cp: lstat, open, fstat) must find the
	// same inode when its open returns with the content. It has no pages
	// (nothing was read) and no open handle (its opens wait for the
	// content); its attributes are stale.
	filled
)

// follow makes the node show e, a newer version of its file, when the
// inode can stay what it is: e has the same content (a change of mode or
// mtime), or e extends the content (an append), or the node is a
// placeholder and e has content (see filled), or retarget is set and no
// handle of the node is open. The last is for an open that races an
// update on a shared store (Options.Shared), where the open must read the
// newest version: the kernel sent it to an inode it is about to be told
// is outdated, and giving that inode the newer version's attributes lets
// the open read the newer version whole, with the matching size, instead
// of failing. c, when not nil, is e's content; otherwise it is read from the
// store when the append check needs it. oldSize is the node's size before.
//
// A node replaced by an unrelated version (or removed) is marked gone and
// reports a link count of 0, as an open file on a local filesystem does
// after a rename-replace or an unlink.
func (f *fileNode) follow(ctx context.Context, e store.Entry, c store.Content, retarget bool) (res followed, oldSize int64) {
	if e.IsDir() {
		return replaced, 0
	}
	nv := newFileVersion(e)
	for range 3 {
		f.mu.Lock()
		v := f.version
		switch {
		case e.Revision <= v.rev:
			f.mu.Unlock()
			return kept, v.size
		case retarget && f.opensLocked() == 0 && !f.passed:
			// A node the kernel was told is gone keeps saying so (its
			// link count): the opener resolved the name before.
			f.fsys.followed.Store(true) // before: see dirNode.listedAs
			f.version = nv
			f.cached = true
			f.primer.primed.Store(false)
			f.mu.Unlock()
			return retargeted, v.size
		case f.gone:
			f.mu.Unlock()
			return replaced, v.size
		case v.same(nv):
			f.fsys.followed.Store(true) // before: see dirNode.listedAs
			f.version = nv
			f.mu.Unlock()
			return refreshed, v.size
		case !v.present && nv.present && f.opensLocked() == 0:
			f.fsys.followed.Store(true) // before: see dirNode.listedAs
			f.version = nv
			f.mu.Unlock()
			return filled, v.size
		case f.passed || !v.present || !nv.present || nv.size <= v.size || v.size > AppendCheckMax:
			f.mu.Unlock()
			return replaced, v.size
		}
		f.mu.Unlock()
		if !f.fsys.extends(ctx, e, c, v) {
			return replaced, v.size
		}
		f.mu.Lock()
		if f.version.rev == v.rev && !f.gone && !f.passed {
			f.fsys.followed.Store(true) // before: see dirNode.listedAs
			f.version = nv
			f.cached = true
			f.mu.Unlock()
			return grew, v.size
		}
		f.mu.Unlock() // changed meanwhile: look again
	}
	return replaced, 0
}

// extends reports whether e's content (c, or the store's when c is nil)
// starts with the whole content of the older version v.
func (fsys *fsys) extends(ctx context.Context, e store.Entry, c store.Content, v fileVersion) bool {
	if c == nil {
		var err error
		if c, err = fsys.st.Open(ctx, e.Path); err != nil {
			return false
		}
		defer c.Close()
	}
	if c.SHA256() != e.SHA256 || c.Size() < v.size {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(c, 0, v.size)); err != nil {
		return false
	}
	return bytes.Equal(h.Sum(nil), v.sum[:])
}

// markGone records that a newer, unrelated version of the file (or its
// removal) replaced this node: it reports a link count of 0 from now on.
func (f *fileNode) markGone() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone = true
}

// snapshot returns the version the node shows now and whether it is gone.
func (f *fileNode) snapshot() (fileVersion, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, f.gone
}
