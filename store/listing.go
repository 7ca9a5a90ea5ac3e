package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/depotfs/depotfs/internal/depotpath"
)

// Lister is a Store that lists a directory as a Listing: what a directory
// read needs of each entry (name, kind, inode number, revision) at once,
// the rest of it decoded only when asked for. Most entries of a walk's
// listings are never looked up (find reads names and kinds), and a whole
// Entry a child was most of a listing's cost and of the garbage it left.
// A mount lists through it when the store has it (store/bolt). It is safe
// for concurrent use.
type Lister interface {
	// List is ReadDir as a Listing: the live children of dir sorted by
	// name, one consistent snapshot, or an error wrapping ErrNotExist or
	// ErrNotDir.
	List(ctx context.Context, dir string) (*Listing, error)
}

// Listed is what a Listing holds of an entry without decoding it.
type Listed struct {
	// Name is the entry's name in its directory. It shares the listing's
	// memory: a caller that keeps it longer than the listing clones it.
	Name     string
	Kind     Kind
	Ino      uint64 // as Entry.Ino
	Revision uint64 // as Entry.Revision
}

// Listing is a directory's entries in name order, held compactly: the
// names in one buffer, each entry's encoded record in another, which
// Entry decodes. The names are apart because a name handed to the kernel
// lives as long as the kernel keeps its node (go-fuse keeps it as the
// node's name), and keeps the buffer it is in: the records are freed with
// the listing. It is built once (ListingOf, or NewListing and Add by a
// store), then only read; reads are safe for concurrent use.
type Listing struct {
	dir     string
	names   []byte // the names, one after the other; only ever appended to
	recs    []byte // the records, one after the other
	at      []listedAt
	decode  func(dir, name string, rec []byte) (RawEntry, error)
	entries []Entry // ListingOf's; nil otherwise
}

// RawEntry is an entry of a Listing with its hashes raw: what a mount's
// node keeps of a file is its hash raw, and spelling it in hex to read it
// back cost a lookup an allocation and two conversions.
type RawEntry struct {
	// Entry is the entry but for its hashes: SHA256 and DeclaredSHA256
	// are "". Its Path is a string of its own, which a caller may keep.
	Entry
	// Sum and Declared are the hashes Entry.SHA256 and
	// Entry.DeclaredSHA256 spell; HasSum and HasDeclared say whether the
	// entry has them.
	Sum, Declared       [32]byte
	HasSum, HasDeclared bool
}

// Spelled returns the entry with its hashes spelled as Entry spells them.
func (r *RawEntry) Spelled() Entry {
	e := r.Entry
	if r.HasSum {
		e.SHA256 = hex.EncodeToString(r.Sum[:])
	}
	if r.HasDeclared {
		e.DeclaredSHA256 = hex.EncodeToString(r.Declared[:])
	}
	return e
}

// listedAt is where one entry's name and record begin in Listing.names
// and Listing.recs; each ends where the next entry's begins.
type listedAt struct {
	name, rec uint32
	kind      Kind
	ino, rev  uint64
}

// NewListing returns an empty listing of dir for a store to Add n entries
// to, whose names take names bytes and records recs bytes (hints); decode
// decodes an entry's record (as Add was given it) into the entry named
// name in dir, with a path of its own, and must keep neither name nor
// rec, which are the listing's memory. Its records and index are those of a released
// listing when one of about the size was released (see Release).
func NewListing(dir string, n, names, recs int, decode func(dir, name string, rec []byte) (RawEntry, error)) *Listing {
	l := &Listing{dir: dir, names: make([]byte, 0, names), decode: decode}
	if b, ok := released.Get().(*listingBufs); ok {
		switch {
		case cap(b.recs) < recs || cap(b.at) < n:
			// Too small: left to the collector.
		case cap(b.recs) > 2*recs+4096:
			released.Put(b) // kept for a larger directory's
		default:
			l.recs, l.at = b.recs, b.at
			return l
		}
	}
	l.recs, l.at = make([]byte, 0, recs), make([]listedAt, 0, n)
	return l
}

// listingBufs are a released listing's records and index.
type listingBufs struct {
	recs []byte
	at   []listedAt
}

// released holds listings' records and indexes for the next listings:
// a walk lists directory after directory, each listing's records garbage
// once its directory is read, and they were half of what a walk that
// looks up few entries (find) allocated.
var released sync.Pool

// maxReleased bounds the records a released listing gives back: a huge
// directory's are left to the collector.
const maxReleased = 4 << 20

// Release gives the listing's records and index back for a later
// listing's (NewListing): a caller calls it once done with the listing
// (a directory handle closed), and does not use the listing after. The
// names stay: a name handed out may live on (see Listing). Entries
// already decoded share nothing with the records. Releasing a listing of
// ListingOf does nothing.
func (l *Listing) Release() {
	if l.recs == nil || cap(l.recs)+cap(l.at)*int(unsafe.Sizeof(listedAt{})) > maxReleased {
		return
	}
	released.Put(&listingBufs{recs: l.recs[:0], at: l.at[:0]})
	l.recs, l.at = nil, nil
}

// ListingOf returns the listing of dir whose entries are entries, for a
// store that has no compact form.
func ListingOf(dir string, entries []Entry) *Listing {
	return &Listing{dir: dir, entries: entries}
}

// Add appends the entry named name with the record rec, which Entry
// decodes later; both are copied. Entries are added in name order.
func (l *Listing) Add(name []byte, kind Kind, ino, rev uint64, rec []byte) {
	l.at = append(l.at, listedAt{name: uint32(len(l.names)), rec: uint32(len(l.recs)), kind: kind, ino: ino, rev: rev})
	l.names = append(l.names, name...)
	l.recs = append(l.recs, rec...)
}

// Len is the number of entries.
func (l *Listing) Len() int {
	if l.entries != nil {
		return len(l.entries)
	}
	return len(l.at)
}

// At returns what the listing holds of entry i without decoding it.
func (l *Listing) At(i int) Listed {
	if l.entries != nil {
		e := &l.entries[i]
		return Listed{Name: depotpath.Base(e.Path), Kind: e.Kind, Ino: e.Ino, Revision: e.Revision}
	}
	a := &l.at[i]
	end := uint32(len(l.names))
	if i+1 < len(l.at) {
		end = l.at[i+1].name
	}
	// The name shares the buffer's bytes, without a copy a name: Add only
	// appends, so bytes once written are never written again (a grown
	// buffer is a new array; the old one stays as it was).
	name := unsafe.String(unsafe.SliceData(l.names[a.name:]), int(end-a.name))
	return Listed{Name: name, Kind: a.kind, Ino: a.ino, Revision: a.rev}
}

// Entry returns entry i whole, decoding its record; an error when the
// record is corrupt. Its strings may share memory with other entries' (a
// store's ReadDir spells a listing's paths into one string): a caller
// that keeps one of them for long copies it.
func (l *Listing) Entry(i int) (Entry, error) {
	if l.entries != nil {
		return l.entries[i], nil
	}
	r, err := l.Raw(i)
	if err != nil {
		return Entry{}, err
	}
	return r.Spelled(), nil
}

// Raw is Entry with the hashes raw and a path of the entry's own (see
// RawEntry).
func (l *Listing) Raw(i int) (RawEntry, error) {
	if l.entries == nil {
		end := uint32(len(l.recs))
		if i+1 < len(l.at) {
			end = l.at[i+1].rec
		}
		return l.decode(l.dir, l.At(i).Name, l.recs[l.at[i].rec:end])
	}
	e := l.entries[i]
	r := RawEntry{Entry: e}
	r.Path = strings.Clone(e.Path)
	r.SHA256, r.DeclaredSHA256 = "", ""
	var ok1, ok2 bool
	r.HasSum, ok1 = unhex(&r.Sum, e.SHA256)
	r.HasDeclared, ok2 = unhex(&r.Declared, e.DeclaredSHA256)
	if !ok1 || !ok2 {
		return RawEntry{}, fmt.Errorf("readdir %s: a hash is not lowercase hex: %w", e.Path, ErrCorrupt)
	}
	return r, nil
}

// unhex reads the hash s spells into sum: whether there is one ("" is
// none), and whether s spells one.
func unhex(sum *[32]byte, s string) (has, ok bool) {
	if s == "" {
		return false, true
	}
	if len(s) != 2*len(sum) {
		return false, false
	}
	_, err := hex.Decode(sum[:], []byte(s))
	return true, err == nil
}
