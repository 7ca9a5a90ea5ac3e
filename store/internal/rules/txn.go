package rules

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// Txn is one write transaction of a store, as the rules see it. Records
// it returns are the store's: the rules read them and never change them.
// It is used by one goroutine at a time.
type Txn interface {
	// Get returns the entry at p as of the transaction, nil when absent
	// (the root has no record).
	Get(p string) (*entryrec.Record, error)
	// Put writes r at p as a change of the given kind and returns the
	// record the store keeps: its Revision, and its Ino when r.Ino is 0,
	// are set by the time the transaction commits, so an entry read from
	// it after the commit is the one committed. Put keeps indexes and
	// pinned references in step; content references (Ref, Unref) and
	// directory times (TouchDir) are the caller's.
	Put(kind store.EventKind, p string, r entryrec.Record) (*entryrec.Record, error)
	// Moved says the entry just Put at p came from the path from by a
	// move: its event carries From.
	Moved(p, from string)
	// Delete deletes the entry r at p (an EventRemoved). Its content
	// reference is the caller's to drop.
	Delete(p string, r *entryrec.Record) error
	// HasChildren reports whether the directory dir has an entry.
	HasChildren(dir string) (bool, error)
	// Descendants returns every entry below dir, deepest first.
	Descendants(dir string) ([]Entry, error)
	// TouchDir moves the mtime and ctime of the directory holding p to
	// the transaction's clock when it commits; the directory keeps its
	// revision and gets no event (the change of p has one).
	TouchDir(p string)
	// UntouchWithin forgets the touches of dir and the directories below
	// it.
	UntouchWithin(dir string)

	// Ref takes a reference on content sum of size bytes. Content the
	// store does not hold is stored by the write that offered it to
	// the store's transaction; otherwise Ref fails.
	Ref(sum string, size int64) error
	// Unref drops a reference on content sum; the store deletes content
	// nothing references once that is safe.
	Unref(sum string) error
	// Use records a use of content sum (for the least recently used
	// order of eviction).
	Use(sum string) error
	// Stored is the size of all referenced content, this transaction's
	// changes included.
	Stored() int64
	// MakeRoom evicts content other than keep, least recently used
	// first and each with Evict, until the store fits its size limit
	// again, or fails with store.ErrLimit.
	MakeRoom(keep string) (store.Evictions, error)
	// CheckQuota fails with a *store.QuotaError when the transaction's
	// changes so far add bytes to a prefix whose quota they exceed (see
	// store.Quota and package quota); it is asked before MakeRoom, so a
	// write over its quota evicts nothing.
	CheckQuota() error

	// Versions returns the versions of p the store retains, newest
	// first.
	Versions(p string) ([]Version, error)
	// HeldWithin returns the held versions of dir and the paths below it.
	HeldWithin(dir string) ([]Version, error)
	// SetVersion writes version v, new or with Held changed. A new one
	// (Until 0) is the record this transaction's last change of v.Path
	// replaced or removed: that change's revision becomes its Until (in
	// nats once the commit assigns it). The store keeps its indexes in
	// step: a held version's content counts as pinned, and every
	// version as a user of its content (Evict's versions, and
	// store.Stats.HeldBytes); the content reference is the caller's.
	SetVersion(v Version) error
	// DropVersion deletes version v; its content reference is the
	// caller's to drop.
	DropVersion(v Version) error
	// DirTimes returns the DirTimes of dir and the directories below
	// it, by path and, for each, oldest first.
	DirTimes(dir string) ([]DirTime, error)
	// DropDirTime deletes the DirTime d.
	DropDirTime(d DirTime) error

	// Snapshots are the snapshots as of the transaction, by name.
	Snapshots() ([]store.Snapshot, error)
	// SetSnapshot writes the snapshot s, or with s nil deletes the one
	// named name.
	SetSnapshot(name string, s *store.Snapshot) error
	// Revision is the store's revision: every entry committed before the
	// transaction has a revision at most this, and so has every entry a
	// store that numbers changes as they are made (bolt) changed earlier
	// in the transaction.
	Revision() uint64
	// Replaced returns the records, as of Revision, of the paths the
	// transaction changed so far, which its changes replaced or removed:
	// none in a store whose Revision counts the transaction's own changes
	// (bolt), the records committed before it in one that numbers them at
	// the commit (nats). A snapshot created in the transaction holds them.
	Replaced() ([]Entry, error)
	// Fresh reports whether r, a record as of the transaction, was
	// written by the running call itself (the function Committer.Update
	// runs), earlier in it: such a record was never visible to a reader
	// and is never a version. A record an earlier call of the same group
	// commit wrote is not fresh: that call was answered with it.
	Fresh(r *entryrec.Record) bool

	// Now is the transaction's clock: one reading for all its changes.
	Now() time.Time
	// Limits are the store's size limits and its KeepVersions.
	Limits() check.Limits
}

// Entry is a record at its path.
type Entry struct {
	Path string
	Rec  *entryrec.Record
}

// Entry is the entry e shows; after the commit for a record Txn.Put
// returned.
func (e Entry) Entry() store.Entry { return e.Rec.Entry(e.Path) }

// SortDeepestFirst orders es deepest first, then by path: the order
// Txn.Descendants returns.
func SortDeepestFirst(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int {
		if c := cmp.Compare(strings.Count(b.Path, "/"), strings.Count(a.Path, "/")); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
}
