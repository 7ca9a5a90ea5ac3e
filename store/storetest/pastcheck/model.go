package pastcheck

import (
	"errors"
	"io/fs"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// rec is one record the model knows: what a path held from the operation
// that wrote it (born) on. Records are never changed once made.
type rec struct {
	kind store.Kind
	sum  string // content hash; "" for a directory
	mode fs.FileMode
	born int // the operation that wrote it
}

// historic reports whether r is a present file: the only kind of record a
// path's history keeps (anything else is kept only while held).
func (r *rec) historic() bool { return r != nil && r.kind == store.KindFile }

// version is a record a later operation (until) replaced or removed and
// that something still retains.
type version struct {
	r     *rec
	until int
}

// visible reports whether v was its path's record after operation op.
func (v version) visible(op int) bool { return v.r.born <= op && op < v.until }

// snap is a snapshot as the model sees it: it holds the tree below prefix
// as it was after operation op.
type snap struct {
	name, prefix string
	op           int
	rev          uint64
	expires      time.Time
}

// model is what each operation means, kept in memory: the live tree, the
// versions retained per path, the snapshots that hold, and the store
// revision after each operation so far.
//
// The rules it applies are store.Versions' contract as DESIGN.md states
// it: a replaced or removed record is kept when a snapshot taken at or
// after its birth covers its path (held), or as history when the change
// replaced or removed a present file's content (not an expiry or a
// move's old path) and keep > 0; then a path's history is trimmed to its
// newest keep present files that nothing holds. A snapshot's release
// trims the paths it held.
//
// A model is not safe for concurrent use; clone it to consider an
// outcome without committing to it.
type model struct {
	keep  int
	live  map[string]*rec
	vers  map[string][]version // newest first
	snaps map[string]*snap     // the holding snapshots by name
	revs  []uint64             // revs[i]: the store's revision after operation i
	now   time.Time
	// dirty is set by a change of the tree: the operation needs a
	// revision of its own (see runner.commit).
	dirty bool
}

func newModel(keep int, now time.Time, rev uint64) *model {
	return &model{keep: keep, live: map[string]*rec{}, vers: map[string][]version{}, snaps: map[string]*snap{}, revs: []uint64{rev}, now: now}
}

func (m *model) clone() *model {
	c := *m
	c.live = maps.Clone(m.live)
	c.vers = map[string][]version{}
	for p, vs := range m.vers {
		c.vers[p] = slices.Clone(vs)
	}
	c.snaps = map[string]*snap{}
	for n, s := range m.snaps {
		cp := *s
		c.snaps[n] = &cp
	}
	c.revs = slices.Clone(m.revs)
	return &c
}

// next is the index of the operation being applied.
func (m *model) next() int { return len(m.revs) }

// last is the index of the last operation applied.
func (m *model) last() int { return len(m.revs) - 1 }

// opAt returns the last operation whose revision is at most rev: the
// state a read at rev shows.
func (m *model) opAt(rev uint64) int {
	i, _ := slices.BinarySearchFunc(m.revs, rev, func(r, target uint64) int {
		if r <= target {
			return -1
		}
		return 1
	})
	return i - 1
}

// held reports whether a holding snapshot covering p sees v.
func (m *model) held(p string, v version) bool {
	for _, s := range m.snaps {
		if depotpath.Within(p, s.prefix) && v.visible(s.op) {
			return true
		}
	}
	return false
}

// retain keeps old, replaced at p by next (nil: removed) in the current
// operation, as the contract says.
func (m *model) retain(p string, old, next *rec, history bool) {
	// A KeepVersions lowered since the path's last change takes effect
	// now, whatever this change keeps.
	defer m.trim(p)
	if old == nil || old.born == m.next() {
		return // written earlier in the same atomic change: never visible
	}
	v := version{r: old, until: m.next()}
	nextSum := ""
	if next.historic() {
		nextSum = next.sum
	}
	hist := history && m.keep > 0 && old.historic() && nextSum != old.sum
	if !m.held(p, v) && !hist {
		return
	}
	m.vers[p] = append([]version{v}, m.vers[p]...)
}

// trim drops p's versions nothing retains: held ones stay, and of the
// others the newest keep present files.
func (m *model) trim(p string) {
	n := 0
	m.vers[p] = slices.DeleteFunc(m.vers[p], func(v version) bool {
		if m.held(p, v) {
			return false
		}
		if v.r.historic() && n < m.keep {
			n++
			return false
		}
		return true
	})
	if len(m.vers[p]) == 0 {
		delete(m.vers, p)
	}
}

// set makes next (nil: nothing) the live record of p, retaining the one
// it replaces.
func (m *model) set(p string, next *rec, history bool) {
	old := m.live[p]
	m.dirty = true
	if next == nil {
		delete(m.live, p)
	} else {
		m.live[p] = next
	}
	m.retain(p, old, next, history)
}

// parents creates the missing ancestors of p as implicit directories;
// ErrConflict when one is a file.
func (m *model) parents(p string, create bool) error {
	for _, d := range depotpath.Parents(p)[1:] {
		r := m.live[d]
		switch {
		case r == nil && create:
			m.set(d, &rec{kind: store.KindDir, born: m.next()}, true)
		case r == nil:
			return nil
		case r.kind != store.KindDir:
			return store.ErrConflict
		}
	}
	return nil
}

// children returns the live paths directly below dir, sorted.
func (m *model) children(dir string) []string {
	var out []string
	for p := range m.live {
		if p != depotpath.Root && parentOf(p) == dir {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// descendants returns the live paths strictly below dir, deepest first.
func (m *model) descendants(dir string) []string {
	var out []string
	for p := range m.live {
		if p != dir && depotpath.Within(p, dir) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if d := strings.Count(b, "/") - strings.Count(a, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return out
}

// prune removes the implicit ancestors of p left without children,
// nearest first. Every directory the model makes is implicit.
func (m *model) prune(p string) {
	ds := depotpath.Parents(p)
	for i := len(ds) - 1; i >= 1; i-- {
		if m.live[ds[i]] == nil || len(m.children(ds[i])) > 0 {
			return
		}
		m.set(ds[i], nil, false)
	}
}

// put is Put(p, content sum, mode).
func (m *model) put(p, sum string, mode fs.FileMode) error {
	if err := m.parents(p, false); err != nil {
		return err
	}
	old := m.live[p]
	if old != nil && old.kind == store.KindDir {
		return store.ErrIsDir
	}
	if old != nil && old.sum == sum && old.mode == mode {
		return nil // nothing to write: no record
	}
	if err := m.parents(p, true); err != nil {
		return err
	}
	m.set(p, &rec{kind: store.KindFile, sum: sum, mode: mode, born: m.next()}, true)
	return nil
}

// remove is Remove(p, recursive).
func (m *model) remove(p string, recursive bool) error {
	r := m.live[p]
	if r == nil {
		return store.ErrNotExist
	}
	if r.kind == store.KindDir {
		below := m.descendants(p)
		if len(below) > 0 && !recursive {
			return store.ErrNotEmpty
		}
		for _, d := range below {
			m.set(d, nil, true)
		}
	}
	m.set(p, nil, true)
	m.prune(p)
	return nil
}

// recordAt is p's record after operation op, when something still
// retains it: the live record when it is that old, else the version
// visible then; nil otherwise.
func (m *model) recordAt(p string, op int) *rec {
	if r := m.live[p]; r != nil && r.born <= op {
		return r
	}
	for _, v := range m.vers[p] {
		if v.visible(op) {
			return v.r
		}
	}
	return nil
}

// transfer is Copy (or Move) from → to; fromOp ≥ 0 copies the file from
// as it was after that operation (a restore).
func (m *model) transfer(from, to string, fromOp int, move, ifAbsent bool) error {
	switch {
	case from == depotpath.Root || to == depotpath.Root:
		return fs.ErrInvalid
	case from == to && fromOp >= 0: // a restore over the file itself
	case depotpath.Within(to, from):
		return fs.ErrInvalid
	}
	src := m.live[from]
	if fromOp >= 0 {
		src = m.recordAt(from, fromOp)
	}
	switch {
	case src == nil:
		return store.ErrNotExist
	case fromOp >= 0 && src.kind == store.KindDir:
		return fs.ErrInvalid
	}
	if err := m.parents(to, false); err != nil {
		return err
	}
	dst := m.live[to]
	switch {
	case dst == nil:
	case ifAbsent, src.kind == store.KindDir:
		return store.ErrExist
	case dst.kind == store.KindDir:
		return store.ErrConflict
	}
	var below []string
	if src.kind == store.KindDir {
		below = m.descendants(from)
		slices.Reverse(below)
	}
	_ = m.parents(to, true)
	place := func(p string, r *rec) {
		m.set(p, &rec{kind: r.kind, sum: r.sum, mode: r.mode, born: m.next()}, true)
	}
	srcs := map[string]*rec{}
	for _, d := range below {
		srcs[d] = m.live[d]
	}
	place(to, src)
	for _, d := range below {
		place(to+strings.TrimPrefix(d, from), srcs[d])
	}
	if !move {
		return nil
	}
	slices.Reverse(below)
	for _, d := range below {
		m.set(d, nil, false)
	}
	m.set(from, nil, false)
	m.prune(from)
	return nil
}

// createSnapshot is CreateSnapshot(name, prefix) holding the tree after
// operation op.
func (m *model) createSnapshot(name, prefix string, op int, rev uint64, expires time.Time) error {
	if _, ok := m.snaps[name]; ok {
		return store.ErrExist
	}
	if prefix != depotpath.Root && m.live[prefix] == nil {
		return store.ErrNotExist
	}
	m.snaps[name] = &snap{name: name, prefix: prefix, op: op, rev: rev, expires: expires}
	return nil
}

// deleteSnapshot is DeleteSnapshot(name): the hold released, and the
// paths of the versions no other snapshot holds trimmed (a path whose
// version another snapshot still holds keeps its history as it is: a
// release is not a change of the path).
func (m *model) deleteSnapshot(name string) error {
	s, ok := m.snaps[name]
	if !ok {
		return store.ErrNotExist
	}
	delete(m.snaps, name)
	for p, vs := range m.vers {
		if !depotpath.Within(p, s.prefix) {
			continue
		}
		for _, v := range vs {
			if v.visible(s.op) && !m.held(p, v) {
				m.trim(p)
				break
			}
		}
	}
	return nil
}

// advance moves the clock on by d and releases the snapshots that expired.
func (m *model) advance(d time.Duration) []string {
	m.now = m.now.Add(d)
	var gone []string
	for n, s := range m.snaps {
		if !s.expires.IsZero() && !s.expires.After(m.now) {
			gone = append(gone, n)
		}
	}
	slices.Sort(gone)
	for _, n := range gone {
		m.deleteSnapshot(n)
	}
	return gone
}

// paths returns every path the model has a record of, live or kept.
func (m *model) paths() []string {
	set := map[string]bool{}
	for p := range m.live {
		set[p] = true
	}
	for p := range m.vers {
		set[p] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// treeAt returns what a walk of the tree at operation op (math.MaxInt:
// the live tree) below prefix finds: every path whose record and every
// ancestor's record below prefix are retained then.
func (m *model) treeAt(op int, prefix string) map[string]*rec {
	out := map[string]*rec{}
	for _, p := range m.paths() {
		if p == prefix || !depotpath.Within(p, prefix) {
			continue
		}
		r := m.recordAt(p, op)
		if r == nil {
			continue
		}
		reachable := true
		for _, d := range depotpath.Parents(p) {
			if depotpath.Within(d, prefix) && d != prefix {
				if a := m.recordAt(d, op); a == nil || a.kind != store.KindDir {
					reachable = false
				}
			}
		}
		if reachable {
			out[p] = r
		}
	}
	return out
}

// history is p's history as History must list it: the live record, then
// the kept versions, newest first.
func (m *model) history(p string) []*rec {
	var out []*rec
	if r := m.live[p]; r != nil {
		out = append(out, r)
	}
	for _, v := range m.vers[p] {
		out = append(out, v.r)
	}
	return out
}

// sameClass reports whether err is of the class the model predicted
// (nil: success).
func sameClass(want, err error) bool {
	if want == nil || err == nil {
		return want == err
	}
	return errors.Is(err, want)
}

// live is the op index meaning "now" for treeAt.
const live = math.MaxInt

func parentOf(p string) string {
	d, _ := depotpath.Split(p)
	return d
}
