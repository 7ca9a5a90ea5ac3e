// Package transfer is the store-independent part of store.Store.Copy and
// Move: the request both stores carry through their transaction, its
// checks on the source and the destination, where each entry of the
// source's tree goes, the record it becomes there, and the result's
// counts. Walking the tree, writing records and content references are
// each store's, inside its own transaction.
package transfer

import (
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// Transfer is a Copy or a Move.
type Transfer struct {
	From, To   string
	IfAbsent   bool
	IfRevision uint64
	Writer     string
	Source     string // a Copy's provenance for the copies, when set
	Move       bool
	// FromRevision, when not 0, copies the file From as it was at that
	// revision (store.CopyRequest.FromRevision).
	FromRevision uint64
}

// Copy is the transfer req asks for.
func Copy(req store.CopyRequest) Transfer {
	return Transfer{From: req.From, To: req.To, IfAbsent: req.IfAbsent, IfRevision: req.IfRevision, Writer: req.Writer, Source: req.Source, FromRevision: req.FromRevision}
}

// Move is the transfer req asks for.
func Move(req store.MoveRequest) Transfer {
	return Transfer{From: req.From, To: req.To, IfAbsent: req.IfAbsent, IfRevision: req.IfRevision, Writer: req.Writer, Move: true}
}

// Op names the operation in errors: "copy" or "move".
func (t Transfer) Op() string {
	if t.Move {
		return "move"
	}
	return "copy"
}

// Check validates the paths, before the store is read (see
// check.Transfer).
func (t Transfer) Check() error { return check.Transfer(t.Op(), t.From, t.To, t.FromRevision != 0) }

// CheckSource applies the conditions on the entry at From (nil: absent):
// it exists, at IfRevision when that is set.
func (t Transfer) CheckSource(src *entryrec.Record) error {
	switch {
	case src == nil:
		return store.ErrNotExist
	case t.FromRevision != 0 && src.Kind == store.KindDir:
		return fmt.Errorf("%w: only a file is copied from an earlier revision", fs.ErrInvalid)
	}
	return entryrec.CheckRevision(src, t.IfRevision)
}

// CheckDestination applies the conditions on the entry at To (nil:
// absent) for the source src: only a file replaces a file, and nothing
// is replaced with IfAbsent.
func (t Transfer) CheckDestination(src, dst *entryrec.Record) error {
	switch {
	case dst == nil:
		return nil
	case t.IfAbsent:
		return store.ErrExist
	case src.Kind == store.KindDir:
		return fmt.Errorf("%w: the destination exists; a directory is only copied or moved to a new path", store.ErrExist)
	case dst.Kind == store.KindDir:
		return fmt.Errorf("%w: the destination is a directory", store.ErrConflict)
	}
	return nil
}

// Target is where the entry at p, From or below it, goes.
func (t Transfer) Target(p string) string { return t.To + strings.TrimPrefix(p, t.From) }

// Place returns the record the entry r becomes at its target, replacing
// the file old there (nil: none), and its event. A copy is new (created
// now, no updates) and takes Source as its provenance when set; a move
// keeps r's. Replacing old keeps old's inode and creation time and counts
// an update when the content differs; otherwise Ino is 0 (the store
// assigns one). Content references are the caller's: it references r's
// content and drops old's.
func (t Transfer) Place(r, old *entryrec.Record, now time.Time) (entryrec.Record, store.EventKind) {
	next := *r
	if !t.Move {
		next.Created, next.Updates = now, 0
		if t.Source != "" {
			next.Source = t.Source
		}
	}
	next.Writer, next.Updated = t.Writer, now
	if old == nil {
		next.Ino = 0
		return next, store.EventCreated
	}
	next.Ino, next.Created = old.Ino, old.Created
	next.Updates = old.Updates
	if !old.Present || old.SHA256 != r.SHA256 {
		next.Updates++
	}
	return next, store.EventUpdated
}

// Result starts the result of a transfer that replaces dst (nil: none):
// created or updated, nothing counted yet.
func Result(dst *entryrec.Record) store.CopyResult {
	if dst != nil {
		return store.CopyResult{Status: store.StatusUpdated}
	}
	return store.CopyResult{Status: store.StatusCreated}
}

// Tally counts the source entry r in res: one entry, and its size when
// it is a present file.
func Tally(res *store.CopyResult, r *entryrec.Record) {
	res.Entries++
	if r.Kind == store.KindFile && r.Present {
		res.Bytes += r.Size
	}
}
