package nats

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/watchhub"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// view keeps this host's state in step with the tree bucket: an ordered
// consumer delivers every message in stream order, and the view applies
// each batch whole, then publishes its events to watchers.
type view struct {
	mu sync.RWMutex
	st *state

	pmu sync.Mutex // serializes deliveries
	gen uint64     // the current consumer's generation
	// delivered is when the consumer last delivered a message (Unix
	// nanoseconds), for the watchdog.
	delivered atomic.Int64
	// skips counts the times the view skipped messages the servers had
	// deleted (see errSkipped).
	skips   atomic.Uint64
	pending []msg // messages of a batch not yet complete
	// pendingCommit is the sequence that completes the pending batch,
	// pendingLast the sequence of its last message so far.
	pendingCommit, pendingLast uint64
	hub                        watchhub.Hub
	done                       <-chan struct{} // closed by Close
	uses                       *uses
	// openSeq is the stream's last sequence when the store opened: the
	// events of messages up to it come from the change records instead;
	// from is the store's revision as of openSeq, and opened is set once
	// they are applied.
	openSeq, from uint64
	opened        bool
	// replay holds the change records read up to openSeq, for the hub
	// (history events long).
	replay  []rawChanges
	history int
	// txns are the ids of the last transactions applied (hdrTxn), oldest
	// first in txnOrder.
	txns     map[string]bool
	txnOrder []string
	// applyErr is the first message the view could not apply; the view
	// stops there rather than show a state that is not the bucket's.
	applyErr error
}

// restart forgets a batch partly delivered by a consumer that is being
// replaced; the new one delivers it again from the first sequence not
// applied.
func (v *view) restart() uint64 {
	v.pmu.Lock()
	defer v.pmu.Unlock()
	v.pending, v.pendingCommit, v.pendingLast = nil, 0, 0
	v.gen++
	return v.gen
}

// msg is one message of the tree stream, as the consumer delivers it or
// as it is read from the stream's leader (see Store.pull).
type msg struct {
	seq     uint64
	subject string
	header  nats.Header
	data    []byte
}

// deliver is the consumer's callback.
func (v *view) deliver(gen uint64, m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		v.fail(fmt.Errorf("message metadata: %w", err))
		return
	}
	v.pmu.Lock()
	defer v.pmu.Unlock()
	if gen != v.gen {
		return // from a consumer that was replaced
	}
	v.delivered.Store(time.Now().UnixNano())
	v.add(msg{seq: meta.Sequence.Stream, subject: m.Subject(), header: m.Headers(), data: m.Data()})
}

// lastDelivery returns when a consumer last delivered a message. A
// consumer started again gets no grace: until it delivers, the watchdog
// reads from the stream's leader.
func (v *view) lastDelivery() time.Time { return time.Unix(0, v.delivered.Load()) }

// skipped returns how many times the view skipped deleted messages.
func (v *view) skipped() uint64 { return v.skips.Load() }

// applied returns the last stream sequence the view applied.
func (v *view) applied() uint64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.st.rev
}

// pulled hands the view messages read from the stream's leader (see
// Store.pull), in stream order.
func (v *view) pulled(msgs []msg) {
	v.pmu.Lock()
	defer v.pmu.Unlock()
	for _, m := range msgs {
		v.add(m)
	}
}

// add collects a batch and applies it once its last message (hdrCommit)
// arrived. Messages come in stream order from the consumer and from
// pulls, which may both bring one: the second is dropped. v.pmu must be
// held.
func (v *view) add(m msg) {
	after := max(v.applied(), v.pendingLast)
	if m.seq <= after {
		return // delivered again by a restarted consumer, or pulled
	}
	if m.seq > after+1 {
		// The messages between were deleted, each replaced by a later
		// message of its key: until the view applies those, its state
		// lacks the values the deleted ones held (see errSkipped).
		v.skips.Add(1)
	}
	commit := m.seq
	if c := m.header.Get(hdrCommit); c != "" {
		if n, err := strconv.ParseUint(c, 10, 64); err == nil {
			commit = n
		}
	}
	// A batch whose last messages were superseded since (the bucket keeps
	// one value per key) never reaches its commit sequence: the messages
	// that replaced them belong to a later batch, so the two are applied
	// together. Applying the part alone would show a state no host
	// committed (an entry without its content record), and a write
	// computed on it would fail.
	v.pending = append(v.pending, m)
	v.pendingCommit = max(v.pendingCommit, commit)
	v.pendingLast = m.seq
	// The servers store a batch whole but may deliver its first messages
	// before the last is stored: wait for the commit sequence.
	if m.seq >= v.pendingCommit {
		msgs := v.pending
		v.pending, v.pendingCommit = nil, 0
		v.apply(msgs, v.pendingLast)
	}
}

// fail stops the view at err, unless it stopped already, and wakes the
// waiters to see it.
func (v *view) fail(err error) {
	v.mu.Lock()
	v.applyErr = cmp.Or(v.applyErr, err)
	v.mu.Unlock()
	v.hub.Wake()
}

// applyPause is waited before each batch is applied: 0 but in tests of
// a host slow to read the tree (SlowApply).
var applyPause atomic.Int64

// apply applies whole batches up to sequence rev and publishes their
// events.
func (v *view) apply(msgs []msg, rev uint64) {
	if d := applyPause.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	var evs []store.Event
	var touched []string
	v.mu.Lock()
	st := v.st
	for _, m := range msgs {
		seq := m.seq
		key := keyOf(m.subject)
		del := m.header.Get(kvOperation) != ""
		ev, sum, err := st.applyOne(key, m.data, del, seq, m.header.Get(hdrEvicted) != "", m.header.Get(hdrTouch) != "")
		if err != nil {
			v.applyErr = cmp.Or(v.applyErr, fmt.Errorf("applying %s at %d: %w", key, seq, err))
			continue
		}
		if ev != nil {
			ev.From = movedFrom(m.header)
		}
		switch {
		case seq <= v.openSeq:
			v.from = st.entryRev
		case ev != nil:
			evs = append(evs, *ev)
		}
		if sum != "" {
			touched = append(touched, sum)
		}
		if id := m.header.Get(hdrTxn); id != "" {
			v.remember(id)
		}
		if seq <= v.openSeq && kindOfKey(key) == 'c' && !del {
			if n, err := changeNumber(key, m.data); err == nil {
				v.replay = append(v.replay, rawChanges{n: n, key: key, data: m.data})
			}
		}
	}
	st.rev = max(st.rev, rev)
	v.open()
	// The events are published before v.mu lets a waiter see the new
	// revision: a write returns once this host applied it (waitFor), and
	// Changes right after must list it. Published after the unlock, a
	// Changes between the two missed the write the caller had just made.
	v.hub.Publish(evs, st.entryRev)
	v.mu.Unlock()
	v.uses.touch(touched...)
}

// open fills the hub from the change records read, once the view has
// applied the stream up to the sequence it had when the store opened;
// v.mu must be held.
func (v *view) open() {
	if !v.opened && v.st.rev >= v.openSeq {
		v.opened = true
		v.hub.Restore(replayed(v.replay, v.from, v.history, v.st.addr))
		v.replay = nil
	}
}

// keyOf returns the KV key of a subject $KV.<bucket>.<key>.
func keyOf(subject string) string {
	_, rest, _ := strings.Cut(subject, ".")
	_, key, _ := strings.Cut(rest, ".")
	return key
}

// applyOne applies one message: it returns the event for an entry change
// and the content a blob write used.
func (st *state) applyOne(key string, data []byte, del bool, seq uint64, evicted, touch bool) (*store.Event, string, error) {
	if len(key) < 2 {
		return nil, "", fmt.Errorf("unknown key %q", key)
	}
	switch kindOfKey(key) {
	case 'e':
		if del {
			// A removal is the depot's change at seq even for a path
			// this host never saw: a host opening the bucket reads only
			// the delete marker that replaced the entry, and its
			// revision must be the other hosts'.
			st.entryRev = seq
			p, ok := st.pathOf(key)
			if !ok {
				return nil, "", nil
			}
			old := st.entries[p]
			st.setEntry(p, nil)
			e := old.entry()
			return &store.Event{Kind: store.EventRemoved, Path: p, Revision: seq, Entry: e}, "", nil
		}
		r, err := decode[record](key, data)
		if err != nil {
			return nil, "", err
		}
		if err := st.addr.openRecord(&r.Record); err != nil {
			return nil, "", fmt.Errorf("record %s: %w", key, err)
		}
		if touch {
			// Only a directory's times moved: no revision, no event.
			r.Revision = r.Rev
			st.setEntry(r.Path, r)
			return nil, "", nil
		}
		r.Revision = seq
		st.entryRev = seq
		kind := store.EventUpdated
		switch {
		case evicted:
			kind = store.EventEvicted
		case st.entries[r.Path] == nil:
			kind = store.EventCreated
		}
		st.setEntry(r.Path, r)
		return &store.Event{Kind: kind, Path: r.Path, Revision: seq, Entry: r.entry()}, "", nil
	case 'b':
		sum := key[2:]
		b, err := decodeUnless[blobRecord](del, key, data)
		if err != nil {
			return nil, "", err
		}
		if st.addr.keyed() {
			// The key names the content's address; the record, or the
			// delete marker, its enciphered hash.
			h := b
			if del {
				if h, err = decode[blobRecord](key, data); err != nil {
					return nil, "", err
				}
			}
			if sum, err = st.addr.open(h.H); err != nil || sum == "" {
				return nil, "", fmt.Errorf("blob %s: %w", key, cmp.Or(err, errNoSum))
			}
			h.H = ""
		}
		old := st.blobs[sum]
		st.setBlob(sum, b)
		if b != nil && (old == nil || b.Refs > old.Refs) {
			return nil, sum, nil
		}
		return nil, "", nil
	case 'd':
		// Inline content goes to the chunk cache only, by its id: a read
		// that misses it gets it from the bucket.
		if !del && st.cache != nil {
			st.cache.add(inlineCacheKey(key[2:]), append([]byte(nil), data...))
		}
	case 'g':
		g, err := decodeUnless[gcRecord](del, key, data)
		if err != nil {
			return nil, "", err
		}
		if g == nil {
			delete(st.gcs, key)
			return nil, "", nil
		}
		g.sum, _ = gcParts(key)
		if st.addr.keyed() {
			if g.sum, err = st.addr.open(g.H); err != nil || g.sum == "" {
				return nil, "", fmt.Errorf("gc record %s: %w", key, cmp.Or(err, errNoSum))
			}
			g.H = ""
		}
		st.gcs[key] = g
	case 'c':
		if del {
			return nil, "", nil
		}
		n, err := changeNumber(key, data)
		st.changeN = max(st.changeN, n+1)
		return nil, "", err
	case 'v':
		return nil, "", st.applyVersion(key, data, del)
	case 's':
		return nil, "", st.applySnapshot(key, data, del)
	case 't':
		return nil, "", st.applyDirTime(key, data, del)
	case 'u':
		u, err := decodeUnless[uploadRecord](del, key, data)
		if err == nil && u != nil {
			if err = st.addr.openUpload(u); err != nil {
				err = fmt.Errorf("upload %s: %w", key, err)
			}
		}
		if err == nil {
			st.setUpload(key, u)
		}
		return nil, "", err
	case 'm':
		if key == keyRoot && !del {
			r, err := decode[rootRecord](key, data)
			if err != nil {
				return nil, "", err
			}
			st.rootTime = r.MTime
			return nil, "", nil
		}
		if key == keyDepot && !del {
			r, err := decode[depotRecord](key, data)
			if err != nil {
				return nil, "", err
			}
			st.depot = r.ID
			return nil, "", nil
		}
		if key != keyCounters || del {
			return nil, "", nil
		}
		c, err := decode[counters](key, data)
		if err != nil {
			return nil, "", err
		}
		st.counters = *c
	default:
		return nil, "", fmt.Errorf("unknown key %q", key)
	}
	return nil, "", nil
}

// waitFor waits until the view has applied sequence seq.
func (v *view) waitFor(ctx context.Context, seq uint64) error {
	return v.waitUntil(ctx, func(rev uint64) bool { return rev >= seq })
}

// applyTimeout bounds how long a host waits to see a change the servers
// already acknowledged.
const applyTimeout = 30 * time.Second

func (v *view) waitUntil(ctx context.Context, done func(uint64) bool) error {
	timer := time.NewTimer(applyTimeout)
	defer timer.Stop()
	for {
		wake, closed := v.hub.Changed(), v.done
		v.mu.RLock()
		rev, err := v.st.rev, v.applyErr
		v.mu.RUnlock()
		if err != nil {
			return err
		}
		if done(rev) {
			return nil
		}
		select {
		case <-wake:
		case <-closed:
			return store.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("this host has not seen the tree bucket move past revision %d within %v", rev, applyTimeout)
		}
	}
}

// maxTxns bounds the transaction ids a view remembers: more than any
// host commits while another settles an unconfirmed commit (see
// Store.settle).
const maxTxns = 1 << 16

// remember records an applied transaction id; v.mu must be held.
func (v *view) remember(id string) {
	if v.txns == nil {
		v.txns = make(map[string]bool)
	}
	v.txns[id] = true
	v.txnOrder = append(v.txnOrder, id)
	if len(v.txnOrder) > maxTxns {
		delete(v.txns, v.txnOrder[0])
		v.txnOrder = v.txnOrder[1:]
	}
}

// committed reports whether the transaction id was applied recently.
func (v *view) committed(id string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.txns[id]
}

// movedFrom returns the path an entry change a move made came from
// (hdrMoved), or "" for any other change. Only this package writes the
// header, escaped, so it always unescapes; a header that did not would
// lose the source of a move, never a change.
func movedFrom(h nats.Header) string {
	from, err := url.PathUnescape(h.Get(hdrMoved))
	if err != nil {
		return ""
	}
	return from
}
