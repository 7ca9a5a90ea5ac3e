package nats

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/quota"
)

// state is one host's copy of the tree bucket, built by applying its
// messages in stream order: what reads and write transactions see. Its
// fields are guarded by view.mu.
type state struct {
	rev      uint64                       // the stream sequence applied last
	entryRev uint64                       // the revision of the last entry change: the store's revision
	entries  map[string]*record           // path → entry
	keyPath  map[[sha256.Size]byte]string // sha256 of the path (its entry key) → path (a deletion names only the key)
	children map[string]map[string]bool   // directory → paths of its children
	refs     map[string]refSet            // content sha256 → paths of present files using it
	expiring map[string]time.Time         // paths that may expire → when
	blobs    map[string]*blobRecord       // content sha256 → blob
	gcs      map[string]*gcRecord         // gc key → record
	uploads  map[string]*uploadRecord     // upload key → upload
	counters counters
	changeN  uint64 // the number of the next change record
	rootTime time.Time
	depot    string      // the depot's id (keyDepot)
	cache    *chunkCache // where inline content goes as it is applied
	addr     addresses   // how the records name content (set before any is applied)
	vstate               // retained versions and snapshots

	quota   *quota.Set    // the store's quotas
	charged quota.Charges // what quota's prefixes are charged, as applied

	counts                entryrec.Counts
	stored, nblobs        int64
	nuploads, uploadBytes int64
}

func newState() *state { return newStateFor(0, 0) }

// newStateFor returns an empty state whose indexes have room for the
// entries and blobs it will hold: growing maps of a million keys one
// doubling at a time was most of a view cache's load.
func newStateFor(entries, blobs int) *state {
	return &state{
		entries:  make(map[string]*record, entries),
		keyPath:  make(map[[sha256.Size]byte]string, entries),
		children: make(map[string]map[string]bool),
		refs:     make(map[string]refSet, blobs),
		expiring: make(map[string]time.Time),
		blobs:    make(map[string]*blobRecord, blobs),
		gcs:      make(map[string]*gcRecord),
		uploads:  make(map[string]*uploadRecord),
		vstate:   newVState(),
	}
}

func addTo(m map[string]map[string]bool, k, v string) {
	s := m[k]
	if s == nil {
		s = make(map[string]bool)
		m[k] = s
	}
	s[v] = true
}

func removeFrom(m map[string]map[string]bool, k, v string) {
	if s := m[k]; s != nil {
		delete(s, v)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}

// setEntry replaces the entry at p (nil removes it), keeping the derived
// indexes and counts in step.
func (st *state) setEntry(p string, r *record) {
	old := st.entries[p]
	st.quota.Charge(st.charged, p, quota.Entry(r.rec())-quota.Entry(old.rec()))
	st.counts.Add(old.rec(), -1)
	st.counts.Add(r.rec(), 1)
	if s := entryrec.PresentSum(old.rec()); s != "" {
		if set := st.refs[s].without(p); set.empty() {
			delete(st.refs, s)
		} else {
			st.refs[s] = set
		}
	}
	if s := entryrec.PresentSum(r.rec()); s != "" {
		st.refs[s] = st.refs[s].with(p)
	}
	delete(st.expiring, p)
	if t := entryrec.Expires(r.rec()); !t.IsZero() {
		st.expiring[p] = t
	}
	dir, _ := depotpath.Split(p)
	if r == nil {
		delete(st.entries, p)
		delete(st.keyPath, sha256.Sum256([]byte(p)))
		removeFrom(st.children, dir, p)
		return
	}
	st.entries[p] = r
	st.keyPath[sha256.Sum256([]byte(p))] = p
	addTo(st.children, dir, p)
}

// pathOf returns the path of the entry at key (entryKey), if this host
// has it.
func (st *state) pathOf(key string) (string, bool) {
	var h [sha256.Size]byte
	if len(key) != 2+hex.EncodedLen(len(h)) {
		return "", false
	}
	if _, err := hex.Decode(h[:], []byte(key[2:])); err != nil {
		return "", false
	}
	p, ok := st.keyPath[h]
	return p, ok
}

// refSet is a set of paths kept for its common case, one path, without a
// map: every file has one in state.refs, and a map of one path cost about
// 200 bytes a file.
type refSet struct {
	one  string          // a member, or "" for none
	more map[string]bool // the other members, nil for none
}

// with returns s with p added.
func (s refSet) with(p string) refSet {
	switch {
	case s.one == "" || s.one == p:
		s.one = p
	case !s.more[p]:
		if s.more == nil {
			s.more = make(map[string]bool)
		}
		s.more[p] = true
	}
	return s
}

// without returns s with p removed.
func (s refSet) without(p string) refSet {
	if s.one == p {
		s.one = ""
		for q := range s.more {
			s.one = q
			delete(s.more, q)
			break
		}
	} else {
		delete(s.more, p)
	}
	if len(s.more) == 0 {
		s.more = nil
	}
	return s
}

func (s refSet) empty() bool { return s.one == "" }

func (s refSet) has(p string) bool { return p != "" && (s.one == p || s.more[p]) }

// all yields the members of s.
func (s refSet) all(yield func(string) bool) {
	if s.one == "" || !yield(s.one) {
		return
	}
	for p := range s.more {
		if !yield(p) {
			return
		}
	}
}

func (st *state) setBlob(sum string, b *blobRecord) {
	if old := st.blobs[sum]; old != nil && old.Refs > 0 {
		st.stored -= old.Size
		st.nblobs--
		if old.heldOnly() {
			st.held -= old.Size
		}
	}
	if b == nil {
		delete(st.blobs, sum)
		return
	}
	st.blobs[sum] = b
	if b.Refs > 0 {
		st.stored += b.Size
		st.nblobs++
		if b.heldOnly() {
			st.held += b.Size
		}
	}
}

func (st *state) setUpload(k string, u *uploadRecord) {
	if old := st.uploads[k]; old != nil && old.Result == nil {
		st.nuploads--
		st.uploadBytes -= old.Bytes
		st.quota.Charge(st.charged, old.File.Path, -old.Bytes)
	}
	if u == nil {
		delete(st.uploads, k)
		return
	}
	st.uploads[k] = u
	if u.Result == nil {
		st.nuploads++
		st.uploadBytes += u.Bytes
		st.quota.Charge(st.charged, u.File.Path, u.Bytes)
	}
}

// descendants returns the entries below dir, in no particular order.
func (st *state) descendants(dir string) []*record {
	var out []*record
	var walk func(d string)
	walk = func(d string) {
		for c := range st.children[d] {
			r := st.entries[c]
			out = append(out, r)
			if r.Kind == store.KindDir {
				walk(c)
			}
		}
	}
	walk(dir)
	return out
}
