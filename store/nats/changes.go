package nats

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
)

// The change log. Every batch that changes entries also writes the events
// it makes into change records, keys c.<n mod History> of the tree bucket,
// in the same atomic batch: the bucket keeps one value a key, so the last
// History records stay, replicated like the tree, and a host that opens
// (or restarts) fills its hub from them. The hub is then only a cache in
// front of the log: Changes and Watch resume from any revision the log
// still holds, on every host.

// changesPerRecord bounds the events of one change record, so a record
// stays far below the servers' max_payload (a move of many files writes
// several records).
const changesPerRecord = 512

// changeRecord is one change record: events Prev < revision ≤ the last
// event's, every entry change of those revisions.
type changeRecord struct {
	N      uint64        `json:"n"`    // the record's number; keys reuse slots
	Prev   uint64        `json:"prev"` // the entry revision before its first event
	Events []store.Event `json:"ev"`
}

// changeKey returns the key of record n.
func (s *Store) changeKey(n uint64) string {
	return "c." + strconv.FormatUint(n%uint64(s.opts.History), 10)
}

// changeMessages adds the change records of t's entry changes, whose
// messages' sequences seq holds.
func (t *txn) changeMessages(add func(string, any), seq map[string]uint64) {
	var evs []store.Event
	for _, p := range t.order {
		old, r := t.st.entries[p], t.entries[p]
		switch {
		case r == nil && old != nil:
			evs = append(evs, store.Event{Kind: store.EventRemoved, Path: p, Revision: seq[p], Entry: old.entry()})
		case r != nil:
			kind := store.EventUpdated
			switch {
			case t.evicted[p]:
				kind = store.EventEvicted
			case old == nil:
				kind = store.EventCreated
			}
			evs = append(evs, store.Event{Kind: kind, Path: p, Revision: r.Revision, Entry: r.entry(), From: t.moved[p]})
		}
	}
	prev := t.st.entryRev
	n := t.st.changeN
	for chunk := range slices.Chunk(evs, changesPerRecord) {
		add(t.s.changeKey(n), changeRecord{N: n, Prev: prev, Events: chunk})
		prev = chunk[len(chunk)-1].Revision
		n++
	}
}

// rawChanges is a change record read at open, kept undecoded until the
// hub is filled (see replayed).
type rawChanges struct {
	n    uint64 // the record's number
	key  string
	data []byte
}

// replayed returns what the change records a host read at open hold for
// its hub, which keeps the newest capacity events: the revision after
// which they are whole and their events. Only the newest run of
// consecutive records counts, and nothing when entries changed after the
// newest record (written by a host that kept no log): then the log starts
// at the store's revision, from. Records are decoded newest first and
// only until they fill the hub: the log may hold History records of up to
// changesPerRecord events each, and decoding every event at open, to keep
// the newest History of them, was half of a host's start-up.
func replayed(recs []rawChanges, from uint64, capacity int, addr addresses) (uint64, []store.Event) {
	slices.SortFunc(recs, func(a, b rawChanges) int { return cmp.Compare(a.n, b.n) })
	var runs [][]store.Event // newest first
	n := 0
	for i := len(recs) - 1; i >= 0 && n < capacity; i-- {
		if i < len(recs)-1 && recs[i].n+1 != recs[i+1].n {
			break
		}
		r, err := decodeChanges(recs[i].key, recs[i].data, addr)
		if err != nil {
			break
		}
		if i == len(recs)-1 && (len(r.Events) == 0 || r.Events[len(r.Events)-1].Revision != from) {
			return from, nil
		}
		runs = append(runs, r.Events)
		n += len(r.Events)
		from = r.Prev
	}
	evs := make([]store.Event, 0, n)
	for _, run := range slices.Backward(runs) {
		evs = append(evs, run...)
	}
	return from, evs
}

// decodeChanges decodes a change record, its entries' hashes opened.
func decodeChanges(key string, data []byte, addr addresses) (changeRecord, error) {
	var r changeRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("change record %s: %w", key, err)
	}
	for i := range r.Events {
		if err := addr.openEntry(&r.Events[i].Entry); err != nil {
			return r, fmt.Errorf("change record %s: %w", key, err)
		}
	}
	return r, nil
}

// changeNumber reads the number of a change record without decoding its
// events: every host applies every record, and needs only the number
// (events come from the entry records, and at open from replayed).
func changeNumber(key string, data []byte) (uint64, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return 0, fmt.Errorf("change record %s: not an object", key)
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return 0, fmt.Errorf("change record %s: %w", key, err)
		}
		if t == "n" {
			var n uint64
			if err := d.Decode(&n); err != nil {
				return 0, fmt.Errorf("change record %s: number: %w", key, err)
			}
			return n, nil
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return 0, fmt.Errorf("change record %s: %w", key, err)
		}
	}
	return 0, fmt.Errorf("change record %s: no number", key)
}

// Changes reads the change log (see store.Store.Changes) from this host's
// hub, which holds what the log held at open and every change since. It
// is safe for concurrent use.
func (s *Store) Changes(ctx context.Context, prefix string, after uint64, limit int) (store.ChangePage, error) {
	if err := s.check(ctx); err != nil {
		return store.ChangePage{}, err
	}
	if err := check.Path("changes", prefix); err != nil {
		return store.ChangePage{}, err
	}
	return s.view.hub.Changes(prefix, after, limit), nil
}
