package bolt

import (
	"bytes"
	"context"
	"encoding/hex"
	"math"
	"sync"
	"unsafe"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	bbolt "go.etcd.io/bbolt"
)

// listing spells the paths and content hashes of a listing's entries into
// one string, which the entries' fields are substrings of: one allocation
// a listing instead of two an entry (the path, the hash in hex), which
// were most of a listing's allocations and a good part of its collector
// work. A caller that keeps one entry of a listing for long (the mount's
// nodes) copies its strings, or it keeps the whole listing's.
type listing struct {
	buf  []byte
	refs []listed
}

// listed is where one entry's strings are in listing.buf: its path from
// from, pathLen bytes, then its hash and its declared hash in hex, 64
// bytes each, when it has them.
type listed struct {
	i, from       int32 // the entry's index in the listing, where its strings begin
	pathLen       int32
	sum, declared bool
}

// newListing returns a listing of n entries whose strings take size
// bytes (the sum of spelled).
func newListing(n, size int) *listing {
	return &listing{buf: make([]byte, 0, size), refs: make([]listed, 0, n)}
}

// spelled is how many bytes the strings of the entry named name (of
// length name) in dir, whose record is v, take in a listing: its path and
// its hashes in hex, read from the record's flags (a corrupt record only
// sizes the listing wrong; decoding it fails).
func spelled(dir string, name int, v []byte) int {
	n := len(dir) + 1 + name
	if len(v) > 2 {
		if v[2]&flagHash != 0 {
			n += 64
		}
		if v[2]&flagDeclared != 0 {
			n += 64
		}
	}
	return n
}

// add spells the path of entry i, dir/name, and its hashes (nil: none).
func (l *listing) add(i int, dir string, name, sum, declared []byte) {
	from := len(l.buf)
	if dir != depotpath.Root {
		l.buf = append(l.buf, dir...)
	}
	l.buf = append(l.buf, '/')
	l.buf = append(l.buf, name...)
	ref := listed{i: int32(i), from: int32(from), pathLen: int32(len(l.buf) - from), sum: sum != nil, declared: declared != nil}
	if sum != nil {
		l.buf = hex.AppendEncode(l.buf, sum)
	}
	if declared != nil {
		l.buf = hex.AppendEncode(l.buf, declared)
	}
	l.refs = append(l.refs, ref)
}

// spell sets the strings of the entries added, in out. The string shares
// the listing's bytes, which nothing writes after this.
func (l *listing) spell(out []store.Entry) {
	s := unsafe.String(unsafe.SliceData(l.buf), len(l.buf))
	for _, ref := range l.refs {
		e := &out[ref.i]
		at := int(ref.from) + int(ref.pathLen)
		e.Path = s[ref.from:at]
		if ref.sum {
			e.SHA256 = s[at : at+64]
			at += 64
		}
		if ref.declared {
			e.DeclaredSHA256 = s[at : at+64]
		}
	}
}

var _ store.Lister = (*Store)(nil)

// List is ReadDir as a store.Listing (see store.Lister): each child's
// name, kind, inode number and revision are read from its record at once,
// and the record is kept for the listing to decode only the entries a
// caller asks for. It is safe for concurrent use.
func (s *Store) List(ctx context.Context, dir string) (*store.Listing, error) {
	var l *store.Listing
	err := s.view(ctx, "readdir", dir, func(tx *bbolt.Tx) error {
		e, err := entryAt(tx, dir, math.MaxUint64, s.sealer)
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return store.ErrNotDir
		}
		prefix := dirPrefix(dir)
		c := tx.Bucket(bucketTree).Cursor()
		// One pass of the cursor, each child peeked at and its name and
		// record copied aside to size the listing once (a second pass
		// cost as much as the first). Copied, not kept as slices of
		// bbolt's map: a slice written to the heap while the collector
		// runs costs a write barrier, which found each such pointer's
		// span (a fifth of a listing's time).
		sc := getScratch()
		defer putScratch(sc)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(sc.at)%1024 == 1023 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			kind, ino, rev, err := peekRecord(v)
			if err != nil {
				return err
			}
			sc.names = append(sc.names, k[len(prefix):]...)
			sc.recs = append(sc.recs, v...)
			sc.at = append(sc.at, peeked{name: len(sc.names), rec: len(sc.recs), kind: kind, ino: ino, rev: rev})
		}
		// The entries decoded share the listing's few distinct sources,
		// encodings and writers, as ReadDirAt's do: a node the kernel
		// keeps holds its source and encoding.
		var (
			sl   = s.sealer
			mu   sync.Mutex
			strs = map[string]string{}
		)
		l = store.NewListing(dir, len(sc.at), len(sc.names), len(sc.recs), func(dir, name string, v []byte) (store.RawEntry, error) {
			var (
				r    record
				sums [2]hash
			)
			mu.Lock()
			sum, declared, err := decodeListed(&r, v, strs, sl, &sums)
			mu.Unlock()
			if err != nil {
				return store.RawEntry{}, pathErr("readdir", depotpath.Join(dir, name), err)
			}
			var p string // one allocation, the path's own
			if dir == depotpath.Root {
				p = "/" + name
			} else {
				p = dir + "/" + name
			}
			e := store.RawEntry{Entry: r.Entry(p)}
			if sum != nil {
				e.Sum, e.HasSum = hash(sum), true
			}
			if declared != nil {
				e.Declared, e.HasDeclared = hash(declared), true
			}
			return e, nil
		})
		name, rec := 0, 0
		for _, p := range sc.at {
			l.Add(sc.names[name:p.name], p.kind, p.ino, p.rev, sc.recs[rec:p.rec])
			name, rec = p.name, p.rec
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// listScratch holds List's children during its transaction, reused
// across listings: their names and records one after the other, and where
// each ends with what peekRecord read of it. One that grew past
// maxPooledScratch bytes is left to the collector, so a huge directory's
// listing does not stay in the pool.
type listScratch struct {
	names, recs []byte
	at          []peeked
}

// peeked is one child in listScratch: the ends of its name and record,
// and what the listing shows of it.
type peeked struct {
	name, rec int
	kind      store.Kind
	ino, rev  uint64
}

var listScratches = sync.Pool{New: func() any { return new(listScratch) }}

const maxPooledScratch = 4 << 20

func getScratch() *listScratch { return listScratches.Get().(*listScratch) }

func putScratch(sc *listScratch) {
	if cap(sc.names)+cap(sc.recs)+cap(sc.at)*int(unsafe.Sizeof(peeked{})) > maxPooledScratch {
		return
	}
	sc.names, sc.recs, sc.at = sc.names[:0], sc.recs[:0], sc.at[:0]
	listScratches.Put(sc)
}
