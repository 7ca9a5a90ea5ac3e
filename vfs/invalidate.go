package vfs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// invalidator turns store events into kernel cache invalidations and keeps
// track of the last revision it has applied. Its run loop is the only
// goroutine that invalidates the live tree (NotifyEntry, NotifyDelete,
// NotifyContent; WaitApplied invalidates names of snapshots, which have no
// events), and none is sent from inside a FUSE callback (the kernel may
// hold locks that the callback's reply releases).
// Only inodes the kernel knows can be cached, and go-fuse keeps every such
// inode in its tree, so walking that tree with GetChild finds everything
// that needs telling.
type invalidator struct {
	fsys *fsys
	root *fs.Inode

	mu      sync.Mutex
	applied uint64        // every event up to this revision is applied
	changed chan struct{} // closed and replaced when applied or err changes
	err     error         // why no more events will be applied
}

func newInvalidator(fsys *fsys, root *fs.Inode, rev uint64) *invalidator {
	return &invalidator{fsys: fsys, root: root, applied: rev, changed: make(chan struct{})}
}

// run applies events until the channel closes or ctx is done, then stops
// the invalidator: with ErrUnmounted if ctx was cancelled (the mount is
// going away), or with an error wrapping store.ErrClosed if the store
// closed the watch.
func (inv *invalidator) run(ctx context.Context, events <-chan store.Event) {
	for {
		select {
		case <-ctx.Done():
			inv.stop(ErrUnmounted)
			return
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					inv.stop(ErrUnmounted)
				} else {
					inv.stop(fmt.Errorf("vfs: store watch ended: %w", store.ErrClosed))
					inv.fsys.log.Error("vfs: store watch ended; the mount no longer sees changes")
				}
				return
			}
			inv.apply(ctx, ev)
			inv.advance(ev.Revision)
		}
	}
}

func (inv *invalidator) advance(rev uint64) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if rev > inv.applied {
		inv.applied = rev
		close(inv.changed)
		inv.changed = make(chan struct{})
	}
}

// stop records that no more events will be applied; the first reason wins.
func (inv *invalidator) stop(err error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.err == nil {
		inv.err = err
		close(inv.changed)
		inv.changed = make(chan struct{})
	}
}

// wait returns once rev is applied, the invalidator stops or ctx is done.
func (inv *invalidator) wait(ctx context.Context, rev uint64) error {
	for {
		inv.mu.Lock()
		applied, err, changed := inv.applied, inv.err, inv.changed
		inv.mu.Unlock()
		switch {
		case applied >= rev:
			return nil
		case err != nil:
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("vfs: waiting for revision %d (applied %d): %w", rev, applied, ctx.Err())
		}
	}
}

// apply invalidates what one event changed, and keeps the blob cache in
// step: a blob cached for a path that changed is dropped (the store may
// have deleted it), and a new version large enough for passthrough is
// queued to be copied in.
func (inv *invalidator) apply(ctx context.Context, ev store.Event) {
	for _, f := range inv.fsys.takeReplaced() {
		inv.notifyRange(&f.Inode, f.path(), -1)
	}
	switch ev.Kind {
	case store.EventResync:
		inv.all(ctx, inv.root, depotpath.Root)
	case store.EventCreated:
		inv.entry(ctx, ev, true)
	case store.EventRemoved:
		inv.removed(ctx, ev.Path)
	case store.EventUpdated, store.EventEvicted:
		inv.entry(ctx, ev, false)
	}
	if pt := inv.fsys.pt.Load(); pt != nil && ev.Kind != store.EventResync {
		sum := ev.Entry.SHA256
		if ev.Kind == store.EventRemoved {
			sum = ""
		}
		pt.changed(ev.Path, sum)
		if sum != "" {
			pt.queue(ev.Entry)
		}
	}
}

// entry invalidates the name of the entry an event is about, the inode's
// attributes and pages, and (when listed is set, or the entry changed kind)
// its parent's listing. If the kernel does not know the entry's parent, the
// deepest ancestor it knows gets the name of the next path component and its
// listing invalidated: that covers directories that appeared only as
// parents, and negative entries. A file the kernel knows is updated as
// fileNode.follow allows: in place, or replaced (see replace).
func (inv *invalidator) entry(ctx context.Context, ev store.Event, listed bool) {
	if ev.Path == depotpath.Root {
		inv.notifyRange(inv.root, ev.Path, 0)
		return
	}
	parent, name, node := inv.find(ev.Path)
	if node != nil && !listed {
		if f, ok := node.Operations().(*fileNode); ok {
			inv.file(ctx, parent, name, f, ev)
			return
		}
	}
	if node != nil {
		inv.notifyRange(node, ev.Path, 0)
		listed = listed || node.IsDir() != ev.Entry.IsDir()
	} else {
		listed = true
	}
	inv.notifyEntry(parent, name, ev.Path)
	if listed {
		inv.notifyRange(parent, ev.Path, 0)
	}
}

// file applies an update of the file node f, named name in parent. The
// node follows the new version when it can (the same content, an append:
// tail -F then reads only what was added, or a placeholder's arriving
// content: cp keeps the inode it looked up); else the kernel is
// told the node was replaced, as by a rename over it, and the node
// reports a link count of 0. Either way the parent's attributes are
// invalidated: its mtime moved.
func (inv *invalidator) file(ctx context.Context, parent *fs.Inode, name string, f *fileNode, ev store.Event) {
	res, old := f.follow(ctx, ev.Entry, nil, false)
	switch res {
	case grew:
		inv.notifyRange(&f.Inode, ev.Path, old&^(pageSize-1))
	case filled:
		inv.notifyRange(&f.Inode, ev.Path, 0)
	case kept, refreshed, retargeted:
		inv.notifyRange(&f.Inode, ev.Path, -1)
	case replaced:
		inv.replace(parent, name, f, ev.Path)
	}
	inv.notifyRange(parent, ev.Path, -1)
}

// replace tells the kernel that the file node f, named name in parent, is
// no longer the file's: the name is dropped and the inode's link count
// cleared (FUSE_NOTIFY_DELETE), and f reports a link count of 0 if asked
// again. Its pages stay: they are still the content of the version that
// open handles read.
func (inv *invalidator) replace(parent *fs.Inode, name string, f *fileNode, p string) {
	f.markGone()
	if parent.NotifyDelete(name, &f.Inode) != 0 {
		inv.notifyEntry(parent, name, p)
	}
	inv.notifyRange(&f.Inode, p, -1)
}

// removed invalidates a removed entry, and then each parent directory that
// disappeared with it (a directory that existed only as a parent goes away
// with its last child).
func (inv *invalidator) removed(ctx context.Context, p string) {
	for p != depotpath.Root {
		parent, name, node := inv.find(p)
		if node != nil {
			if f, ok := node.Operations().(*fileNode); ok {
				f.markGone()
			}
		}
		if node == nil || parent.NotifyDelete(name, node) != 0 {
			inv.notifyEntry(parent, name, p)
		}
		inv.notifyRange(parent, p, 0)
		p, _ = depotpath.Split(p)
		if _, err := inv.fsys.st.Stat(ctx, p); !errors.Is(err, store.ErrNotExist) {
			return
		}
	}
}

// all invalidates every inode the kernel knows below n (the directory at
// depot path p), and n itself, after events were lost. The kernel may also
// remember names as missing (negative entries), which go-fuse does not
// track: every name the store now has in a known directory is invalidated
// too. That costs one ReadDir per known directory, only on a resync.
func (inv *invalidator) all(ctx context.Context, n *fs.Inode, p string) {
	known := n.Children()
	for name, ch := range known {
		cp := depotpath.Join(p, name)
		if ch.IsDir() {
			inv.all(ctx, ch, cp)
		} else {
			inv.notifyRange(ch, cp, 0)
		}
		inv.notifyEntry(n, name, cp)
	}
	entries, err := inv.fsys.st.ReadDir(ctx, p)
	if err != nil && !errors.Is(err, store.ErrNotExist) && !errors.Is(err, store.ErrNotDir) {
		inv.fsys.log.Warn("vfs: listing a directory after lost events failed; names it has may still look missing", "path", p, "err", err)
	}
	for _, e := range entries {
		if name := depotpath.Base(e.Path); known[name] == nil {
			inv.notifyEntry(n, name, e.Path)
		}
	}
	inv.notifyRange(n, p, 0)
}

// find walks the kernel-known inodes from the root towards p. It returns the
// deepest known directory on the way, the next path component below it, and
// the inode for that component if it is known and is p itself. p must not
// be the root.
func (inv *invalidator) find(p string) (parent *fs.Inode, name string, node *fs.Inode) {
	parent = inv.root
	rest := strings.TrimPrefix(p, "/")
	for {
		name, rest, _ = strings.Cut(rest, "/")
		ch := parent.GetChild(name)
		if ch == nil {
			return parent, name, nil
		}
		if rest == "" {
			return parent, name, ch
		}
		if !ch.IsDir() {
			return parent, name, nil
		}
		parent = ch
	}
}

// notifyEntry and notifyRange send one invalidation. ENOENT means the
// kernel has already forgotten what we asked it to forget; anything else is
// logged, since a failed invalidation may leave a reader with stale data.
func (inv *invalidator) notifyEntry(parent *fs.Inode, name, p string) {
	if errno := parent.NotifyEntry(name); errno != 0 && errno != syscall.ENOENT {
		inv.fsys.log.Warn("vfs: invalidating an entry failed", "path", p, "name", name, "err", errno)
	}
}

// notifyRange invalidates n's attributes and its pages from off to the
// end; none when off is negative.
func (inv *invalidator) notifyRange(n *fs.Inode, p string, off int64) {
	if errno := n.NotifyContent(off, 0); errno != 0 && errno != syscall.ENOENT {
		inv.fsys.log.Warn("vfs: invalidating an inode failed", "path", p, "err", errno)
	}
}
