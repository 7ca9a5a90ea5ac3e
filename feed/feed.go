// Package feed is the depot's change feed: the changes below a prefix
// after a revision, filtered by the caller's grants, read from the change
// log the store keeps (store.Store.Changes), so a reader resumes from any
// revision the log still holds, after a restart and on every host of a
// shared depot, and is told to resync (with the oldest revision kept)
// when its cursor is older than that, never left with a silent gap.
//
// It is one function with several doors, each in the package that owns
// its protocol: the guide_changes tool (a long poll), resource
// subscriptions to a directory, and GET /changes (Server-Sent Events),
// all in mcpserver. Like the tools, it reads through package store and
// decides permissions through internal/policy.
package feed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/store"
)

// Kind says what a change did to its path.
type Kind string

// The kinds of change.
const (
	// Created: the path had no entry and now has one with content (or is
	// a directory).
	Created Kind = "created"
	// Updated: the entry's content or metadata changed.
	Updated Kind = "updated"
	// Removed: the entry is gone (a removal, an expiry, or the old side
	// of a move).
	Removed Kind = "removed"
	// Moved: the entry was moved here from Change.From (whose removal
	// follows in the same commit), whether or not the path had an entry.
	Moved Kind = "moved"
	// Declared: a file without content, a placeholder listed by an agent,
	// was created or changed.
	Declared Kind = "declared"
	// Evicted: the file's content was dropped to make room; the entry
	// stays as a placeholder.
	Evicted Kind = "evicted"
)

// KindOf returns the feed's kind of a store event.
func KindOf(ev store.Event) Kind {
	switch ev.Kind {
	case store.EventRemoved:
		return Removed
	case store.EventEvicted:
		return Evicted
	}
	if ev.From != "" {
		return Moved
	}
	if ev.Entry.Kind == store.KindFile && !ev.Entry.Present {
		return Declared
	}
	if ev.Kind == store.EventCreated {
		return Created
	}
	return Updated
}

// Change is one change as the doors send it.
type Change struct {
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// From is, for a move, the path the entry was moved from.
	From     string `json:"from,omitempty"`
	Type     string `json:"type"` // "file" or "directory"
	Revision uint64 `json:"revision"`
	// Size and SHA256 are the content's after the change (before it, for
	// a removal); a directory has neither, a placeholder its declared
	// size and no hash.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	// Count, when above 1, says this change stands for that many updates
	// of its path in a row, of which it is the last.
	Count int `json:"count,omitempty"`
}

// changeOf returns the change a store event describes, as a caller who may
// read everything sees it.
func changeOf(ev store.Event) Change {
	c := Change{Path: ev.Path, Kind: KindOf(ev), From: ev.From, Type: ev.Entry.Kind.String(), Revision: ev.Revision}
	if ev.Entry.Kind == store.KindFile {
		c.Size, c.SHA256 = ev.Entry.Size, ev.Entry.SHA256
	}
	return c
}

// ChangeFor returns the change a store event describes as a caller with
// perms sees it: a move from a path it may not read is, to that caller,
// a creation or an update that names no source, since From would reveal a
// path outside its grants.
func ChangeFor(perms policy.Set, ev store.Event) Change {
	if ev.From != "" && !Visible(perms, ev.From) {
		ev.From = ""
	}
	return changeOf(ev)
}

// Page is one answer of Read.
type Page struct {
	// Changes are the caller's changes after the cursor asked with, in
	// revision order, each once.
	Changes []Change `json:"changes"`
	// Cursor is the revision to ask from next: every change below the
	// prefix up to it was in this page or before the cursor asked with.
	Cursor uint64 `json:"cursor"`
	// Revision is the depot's revision when the page was read; More says
	// changes after Cursor may follow at once.
	Revision uint64 `json:"revision"`
	More     bool   `json:"more"`
	// Resync says the cursor was older than the oldest change kept,
	// Oldest: changes were lost to the reader, who must treat everything
	// below the prefix as changed (list or read it again) and continue
	// from Cursor.
	Resync bool   `json:"resync,omitempty"`
	Oldest uint64 `json:"oldest"`
}

// Limits of a request.
const (
	// DefaultMax and MaxMax bound the changes of one page.
	DefaultMax = 100
	MaxMax     = 1000
	// MaxWait bounds how long Read waits for a first change.
	MaxWait = 60 * time.Second
)

// Request is what Read reads.
type Request struct {
	Prefix string        // clean depot path; "/" for the whole depot
	Since  uint64        // the cursor: changes after this revision
	Max    int           // at most this many changes; 0 means DefaultMax
	Wait   time.Duration // wait up to this long for a first change
}

// ErrCursor is wrapped by the error for a cursor beyond the depot's
// revision: no reply of this depot gave it.
var ErrCursor = errors.New("cursor beyond the depot's revision")

// Visible reports whether a caller with perms sees a change at path:
// whether it may read the path through some tool.
func Visible(perms policy.Set, path string) bool { return perms.AnyTool(path, grant.Read) }

// CheckPrefix refuses a prefix the caller can see nothing below, with a
// *policy.Denied naming its grants.
func CheckPrefix(perms policy.Set, tool, prefix string) error {
	if perms.Reaches(prefix, grant.Read) {
		return nil
	}
	return &policy.Denied{Tool: tool, Path: prefix, Access: grant.Read,
		Rule: fmt.Sprintf("no grant allows reading %s or anything below it; grants: %s", prefix, perms)}
}

// Read returns the changes below req.Prefix after req.Since that perms
// may see, waiting up to req.Wait for a first one (a long poll; it returns
// early when ctx ends). Updates in a row of one path are folded into the
// last of them, with a Count. The caller checks the prefix (CheckPrefix).
func Read(ctx context.Context, st store.Store, perms policy.Set, req Request) (Page, error) {
	if req.Max <= 0 {
		req.Max = DefaultMax
	}
	req.Max = min(req.Max, MaxMax)
	wait := min(req.Wait, MaxWait)
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	var f folder
	after := req.Since
	synced, check := false, true
	for {
		page, err := st.Changes(ctx, req.Prefix, after, req.Max)
		if err != nil {
			return Page{}, fmt.Errorf("reading the changes below %s after %d: %w", req.Prefix, after, err)
		}
		if check && after > page.Revision {
			// On a depot several hosts share, this one may be behind the
			// host that gave the cursor: catch up once before refusing.
			sy, ok := st.(syncer)
			if !ok || synced {
				return Page{}, fmt.Errorf("%w: since %d, the depot is at revision %d", ErrCursor, after, page.Revision)
			}
			synced = true
			if err := sy.Sync(ctx); err != nil {
				return Page{}, fmt.Errorf("catching up with the depot for since %d: %w", after, err)
			}
			continue
		}
		check = false
		if page.Resync {
			return Page{Changes: []Change{}, Cursor: page.Next, Revision: page.Revision, Resync: true, Oldest: page.Oldest}, nil
		}
		full := false
		for _, ev := range page.Events {
			if Visible(perms, ev.Path) {
				f.add(ChangeFor(perms, ev))
			}
			after = ev.Revision
			if len(f.out) == req.Max {
				full = true
				break
			}
		}
		if !full {
			after = max(after, page.Next)
		}
		caughtUp := after >= page.Revision
		switch {
		case full || caughtUp && len(f.out) > 0:
			return f.page(after, page), nil
		case !caughtUp:
			// The store's page ended, or held only changes the caller
			// may not see: read on.
		case deadline == nil || !waitChange(ctx, st, req.Prefix, after, deadline):
			return f.page(after, page), nil
		}
	}
}

// syncer is a store shared by several hosts (store/nats): Sync waits until
// this host has applied every change committed anywhere before the call.
type syncer interface {
	Sync(ctx context.Context) error
}

// waitChange waits for a change below prefix after rev; it reports false
// when the deadline passed or ctx ended first.
func waitChange(ctx context.Context, st store.Store, prefix string, rev uint64, deadline <-chan time.Time) bool {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := st.Watch(wctx, prefix, rev)
	if err != nil {
		return false
	}
	select {
	case _, ok := <-ch:
		return ok
	case <-deadline:
	case <-ctx.Done():
	}
	return false
}

// folder collects a page's changes, folding updates in a row of one path.
type folder struct {
	out  []Change
	last map[string]int // path → index in out of its last change, while an update
}

func (f *folder) add(c Change) {
	if f.last == nil {
		f.last = map[string]int{}
	}
	if i, ok := f.last[c.Path]; ok && c.Kind == Updated {
		c.Count = max(f.out[i].Count, 1) + 1
		f.out = append(f.out[:i], f.out[i+1:]...)
		for p, j := range f.last {
			if j > i {
				f.last[p] = j - 1
			}
		}
	}
	delete(f.last, c.Path)
	if c.Kind == Updated {
		f.last[c.Path] = len(f.out)
	}
	f.out = append(f.out, c)
}

func (f *folder) page(cursor uint64, p store.ChangePage) Page {
	out := f.out
	if out == nil {
		out = []Change{}
	}
	return Page{Changes: out, Cursor: cursor, Revision: p.Revision, More: cursor < p.Revision, Oldest: p.Oldest}
}
