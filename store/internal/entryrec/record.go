// Package entryrec is the entry record both stores keep, and what is
// decided from records alone: the entry a record shows, whether two
// records differ, the content a record holds or pins, when it expires,
// a write's conditions, and the record a put or a declaration makes.
// Reading and writing records, revisions, inodes and content references
// stay with each store: bolt assigns them inside its bbolt transaction,
// nats when it turns a transaction into its atomic batch.
package entryrec

import (
	"fmt"
	"io/fs"
	"time"

	"github.com/depotfs/depotfs/store"
)

// Record is an entry without its path. Revision is set by the store and
// never encoded. The JSON names are store/nats's stored format (bolt
// encodes records itself): changing one makes existing buckets unreadable.
type Record struct {
	Kind     store.Kind  `json:"k"`
	Ino      uint64      `json:"i"`
	Size     int64       `json:"s,omitzero"`
	SHA256   string      `json:"h,omitzero"`
	Declared string      `json:"dh,omitzero"` // a placeholder's declared hash (store.Entry.DeclaredSHA256)
	Mode     fs.FileMode `json:"m,omitzero"`
	MTime    time.Time   `json:"mt,omitzero"`
	Encoding string      `json:"en,omitzero"`
	Source   string      `json:"src,omitzero"`
	Created  time.Time   `json:"c,omitzero"`
	Updated  time.Time   `json:"u,omitzero"`
	Updates  uint64      `json:"n,omitzero"`
	Writer   string      `json:"w,omitzero"`
	Expires  time.Time   `json:"x,omitzero"`
	Pinned   bool        `json:"pin,omitzero"`
	Present  bool        `json:"pr,omitzero"`
	Explicit bool        `json:"ex,omitzero"`
	Revision uint64      `json:"-"`
}

// Entry is the entry r shows at path p.
func (r *Record) Entry(p string) store.Entry {
	return store.Entry{
		Path: p, Kind: r.Kind, Ino: r.Ino,
		Size: r.Size, SHA256: r.SHA256, DeclaredSHA256: r.Declared, Mode: r.Mode, MTime: r.MTime,
		Encoding: r.Encoding, Source: r.Source,
		Created: r.Created, Updated: r.Updated, Updates: r.Updates, Writer: r.Writer,
		Expires: r.Expires, Pinned: r.Pinned, Present: r.Present, Explicit: r.Explicit,
		Revision: r.Revision,
	}
}

// SameMeta reports whether a and b agree on everything but the revision
// and the update time: whether writing b over a would change the entry.
func SameMeta(a, b *Record) bool {
	x, y := a, b
	return x.MTime.Equal(y.MTime) && x.Expires.Equal(y.Expires) && x.Created.Equal(y.Created) &&
		x.Kind == y.Kind && x.Ino == y.Ino && x.Size == y.Size && x.SHA256 == y.SHA256 && x.Declared == y.Declared &&
		x.Mode == y.Mode && x.Encoding == y.Encoding && x.Source == y.Source &&
		x.Updates == y.Updates && x.Writer == y.Writer && x.Pinned == y.Pinned &&
		x.Present == y.Present && x.Explicit == y.Explicit
}

// PresentSum is the content hash of a present file, else "" (r nil
// too).
func PresentSum(r *Record) string {
	if r == nil || r.Kind != store.KindFile || !r.Present {
		return ""
	}
	return r.SHA256
}

// NewContent reports whether writing b over a gives a file new content:
// then the directory's times move, as a rename-replace moves them on a
// local filesystem (the mount shows an update so), while a change of
// metadata alone, or an eviction, leaves them.
func NewContent(a, b *Record) bool {
	s := PresentSum(b)
	return s != "" && s != PresentSum(a)
}

// PinnedSum is the content hash of a pinned present file, else "".
func PinnedSum(r *Record) string {
	if r == nil || !r.Pinned {
		return ""
	}
	return PresentSum(r)
}

// Expires is when the file r may expire (an expiry set, not pinned), else
// zero: directories and pinned files never expire.
func Expires(r *Record) (t time.Time) {
	if r == nil || r.Kind != store.KindFile || r.Pinned {
		return t
	}
	return r.Expires
}

// UTC normalizes a time for storage: UTC, no monotonic reading; zero
// stays zero.
func UTC(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Round(0)
}

// Counts are the entry counts a store keeps; the root is not counted.
type Counts struct {
	Files, Placeholders, Dirs int64
	Logical                   int64 // the sizes of present files
}

// Add adds r's contribution (nil: none) to c, times sign.
func (c *Counts) Add(r *Record, sign int64) {
	switch {
	case r == nil:
	case r.Kind == store.KindDir:
		c.Dirs += sign
	case r.Present:
		c.Files += sign
		c.Logical += sign * r.Size
	default:
		c.Placeholders += sign
	}
}

// CheckWrite applies a file write's conditions to the current entry r
// (nil: absent): a directory is never overwritten, IfAbsent wants no
// entry, IfRevision (see CheckRevision).
func CheckWrite(r *Record, ifAbsent bool, ifRevision uint64) error {
	if r != nil && r.Kind == store.KindDir {
		return fmt.Errorf("%w: the path is a directory", store.ErrConflict)
	}
	if ifAbsent && r != nil {
		return store.ErrExist
	}
	return CheckRevision(r, ifRevision)
}

// CheckRevision applies a write's IfRevision condition (0: none) to r,
// the entry as the write sees it (nil: absent). A record with revision 0
// is one an earlier call in the same nats group commit changed, whose
// revision the commit has not assigned yet: it matches no revision a
// caller can hold. bolt assigns revisions as it writes, so its records
// never have 0.
func CheckRevision(r *Record, want uint64) error {
	if want == 0 {
		return nil
	}
	switch {
	case r == nil:
		return fmt.Errorf("%w: expected %d, the entry does not exist", store.ErrRevision, want)
	case r.Revision == 0:
		return fmt.Errorf("%w: expected %d, a concurrent call is changing the entry", store.ErrRevision, want)
	case r.Revision != want:
		return fmt.Errorf("%w: expected %d, entry is at %d", store.ErrRevision, want, r.Revision)
	}
	return nil
}
