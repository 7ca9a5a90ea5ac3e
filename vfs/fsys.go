package vfs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/store"
)

// fsys is what every node of one mount shares: the store and the resolved
// options. It is immutable once Mount has built it, so nodes use it from any
// goroutine without locking, except pt, which Mount sets once it knows
// whether the kernel takes passthrough, replaced, and snaps (which guards
// itself).
type fsys struct {
	st      store.Store
	opts    Options
	log     *slog.Logger
	started time.Time
	pt      atomic.Pointer[blobs] // nil: passthrough off
	snaps   snapIDs               // the snapshots' numbers in the mount
	// syncHosts, with Options.Shared and a store that can catch up with the
	// other hosts (catcherUp), is its CatchUp; nil otherwise.
	syncHosts func(context.Context) error
	// cutOff is when a lookup last failed to catch up (UnixNano), 0 when
	// none has (see catchUp).
	cutOff atomic.Int64

	mu sync.Mutex // guards replaced and staled
	// replaced are file nodes a lookup replaced before the invalidator
	// saw the update: it invalidates their attributes (the link count
	// dropped to 0) with the next event, never from inside the lookup.
	replaced []*fileNode
	// staled holds the paths an open failed with ESTALE in the last
	// lingerFor, and when (see stale).
	staled map[string]time.Time
	// anyStaled is len(staled) > 0, read without mu: a lookup asks
	// staledRecently, and a walk's lookups should not all take mu.
	anyStaled atomic.Bool
	// followed: a file node of the mount once followed a newer version
	// (see fileNode.follow), so its inode number may not be its
	// version's; until then a listing numbers each file from its entry
	// alone (see dirNode.listedAs).
	followed atomic.Bool
}

// catcherUp is a store other hosts write (store/nats) that can wait until
// this host has applied every change any host had acknowledged before the
// call, as its opens and listings do.
type catcherUp interface {
	CatchUp(ctx context.Context) error
}

// catchUp makes a live lookup on a shared store close-to-open, like an
// open: a name another host removed or moved away before the lookup began
// is gone, one it created is there. The kernel keeps no live entry (see
// nodeOptions), so every path walk reaches a lookup. Without Shared it
// costs nothing: this host's own changes reach the kernel before their
// writers answer.
//
// A lookup that begins within cutOffGrace of one that could not catch up
// fails at once, as that one did: the kernel runs the lookups of one name
// one after the other (a walker waits for the lookup in flight, then sends
// its own when it failed), so during a quorum loss each of N programs
// walking the same path would otherwise wait the whole write time limit
// after the one before it (three walkers of one directory took three
// times the limit).
func (fsys *fsys) catchUp(ctx context.Context) error {
	if fsys.syncHosts == nil {
		return nil
	}
	if t := fsys.cutOff.Load(); t != 0 && time.Since(time.Unix(0, t)) < cutOffGrace {
		return errCutOff
	}
	err := fsys.syncHosts(ctx)
	if errors.Is(err, store.ErrUnavailable) {
		fsys.cutOff.Store(time.Now().UnixNano())
	}
	return err
}

// cutOffGrace is how long after a lookup failed to catch up with the other
// hosts the next ones fail at once: long enough for the walkers queued
// behind it, short enough that a cluster back a moment later is asked.
const cutOffGrace = time.Second

// errCutOff fails a lookup during cutOffGrace (see fsys.catchUp).
var errCutOff = fmt.Errorf("%w: this host could not catch up with the other hosts a moment ago", store.ErrUnavailable)

// stale records that an open of the file at p failed with ESTALE, and
// returns ESTALE. The kernel retries such an open once, after a fresh
// lookup: that lookup must answer a node that holds its version (see
// fileNode.keep), or an update landing between the retry's lookup and its
// open fails the retry the same way, and the program sees ESTALE. The
// lookup cannot tell it is a retry by itself: the node it replaces may
// already be forgotten (the kernel was told of the update, dropped the
// name and sent FORGET), and the file may have changed more than
// lingerFor ago (an update every few seconds, or a loaded machine).
func (fsys *fsys) stale(p string) syscall.Errno {
	now := time.Now()
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	for q, at := range fsys.staled {
		if now.Sub(at) >= lingerFor {
			delete(fsys.staled, q)
		}
	}
	if fsys.staled == nil {
		fsys.staled = make(map[string]time.Time)
	}
	fsys.staled[p] = now
	fsys.anyStaled.Store(true)
	return syscall.ESTALE
}

// staledRecently reports whether an open of the file at p failed with
// ESTALE in the last lingerFor (see stale).
func (fsys *fsys) staledRecently(p string) bool {
	if !fsys.anyStaled.Load() {
		return false
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	at, ok := fsys.staled[p]
	if ok && time.Since(at) >= lingerFor {
		// Expired: stale prunes the others, and this one goes now, so a
		// burst of failed opens leaves nothing behind once its paths are
		// looked up again.
		delete(fsys.staled, p)
		fsys.anyStaled.Store(len(fsys.staled) > 0)
		return false
	}
	return ok
}

// noteReplaced queues f for the invalidator (see replaced).
func (fsys *fsys) noteReplaced(f *fileNode) {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	fsys.replaced = append(fsys.replaced, f)
}

// takeReplaced returns and forgets the queued replaced nodes.
func (fsys *fsys) takeReplaced() []*fileNode {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	r := fsys.replaced
	fsys.replaced = nil
	return r
}

// child returns the inode for entry e, named name in directory parent, and
// fills out for the kernel. It reuses the inode parent already has under
// that name when it is the same version of the same entry, or a file node
// that can follow e (see fileNode.follow): go-fuse would discard a
// duplicate anyway, and invalidations sent to a discarded duplicate fail.
// A file node e replaces is marked gone, and a new file node for a file
// being updated (it replaces an older node, its content changed in the
// last lingerFor, or an open of it just failed with ESTALE: this is the
// kernel's retry) holds its content for a while (see fileNode.keep), so
// that an open racing the next update still reads what the lookup said.
// raw, when not nil, is e as a listing decoded it (e is raw.Entry): its
// hashes are spelled only when the node follows or keeps a version,
// which compare hashes as the store spells them; a new node (a walk's)
// takes raw's path and hash as they are.
func (fsys *fsys) child(ctx context.Context, parent *fs.Inode, name string, e store.Entry, raw *store.RawEntry, out *fuse.EntryOut) *fs.Inode {
	spelled := func() store.Entry {
		if raw != nil {
			e = raw.Spelled()
			raw = nil
		}
		return e
	}
	id := stableAttr(e)
	replacing := false
	if ch := parent.GetChild(name); ch != nil {
		if f, ok := ch.Operations().(*fileNode); ok && !e.IsDir() {
			if res, _ := f.follow(ctx, spelled(), nil, false); res != replaced {
				// The kernel's retry of an open that failed with ESTALE
				// may reach a node made by another lookup that held
				// nothing (a file at rest then): it must hold its
				// version now, or be replaced by a node that does.
				if !fsys.staledRecently(e.Path) || f.hold(ctx) {
					f.fillAttr(&out.Attr)
					return ch
				}
			}
			f.markGone()
			fsys.noteReplaced(f)
			replacing = true
		} else if ch.StableAttr() == id {
			fsys.fillAttr(e, &out.Attr)
			return ch
		}
	}
	var n fs.InodeEmbedder
	switch {
	case e.IsDir():
		n = &dirNode{node: node{fsys: fsys}, path: strings.Clone(e.Path)}
	case replacing || justUpdated(e) || fsys.staledRecently(e.Path):
		f := &fileNode{node: node{fsys: fsys}, version: newFileVersion(spelled())}
		e = f.keep(ctx, e)
		id = stableAttr(e)
		n = f
	case raw != nil:
		n = &fileNode{node: node{fsys: fsys}, version: rawVersion(raw)}
	default:
		n = &fileNode{node: node{fsys: fsys}, version: newFileVersion(e)}
	}
	fsys.fillAttr(e, &out.Attr)
	return parent.NewInode(ctx, n, id)
}

// justUpdated reports whether e's content was replaced less than lingerFor
// ago (by the store's clock, so either way: hosts' clocks differ): the file
// is being updated, and may be again before an open of it arrives.
func justUpdated(e store.Entry) bool {
	if e.Updates == 0 {
		return false // never updated: no clock read (a walk's lookups)
	}
	since := time.Since(e.Updated)
	return since < lingerFor && since > -lingerFor
}
