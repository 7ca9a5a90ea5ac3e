package store

// EventKind says what happened to an entry.
type EventKind uint8

// The kinds of change event.
const (
	// EventCreated: a path that had no entry now has one.
	EventCreated EventKind = iota + 1
	// EventUpdated: an entry's content or metadata changed.
	EventUpdated
	// EventRemoved: an entry was removed.
	EventRemoved
	// EventEvicted: a file's content was dropped to make room; the entry
	// stays as a placeholder.
	EventEvicted
	// EventResync: events were lost (the subscriber asked for history the
	// store no longer keeps); the subscriber must treat everything under its
	// prefix as changed. Path is the watched prefix.
	EventResync
)

func (k EventKind) String() string { return name(eventNames[:], int(k)) }

var eventNames = [...]string{EventCreated: "created", EventUpdated: "updated", EventRemoved: "removed", EventEvicted: "evicted", EventResync: "resync"}

// Event is one change to the namespace.
type Event struct {
	Kind     EventKind
	Path     string
	Revision uint64
	// Entry is the entry after the change; for EventRemoved, the entry as it
	// was before removal (so Ino and Kind are known).
	Entry Entry
	// From, on the EventCreated or EventUpdated of an entry a Move wrote,
	// is the path the entry was moved from (whose EventRemoved follows in
	// the same commit); empty for every other change. A reader of a
	// prefix the old path is outside of learns of the move from it.
	From string `json:",omitempty"`
}

// ChangePage is one answer of Store.Changes.
type ChangePage struct {
	// Events are the changes within the prefix asked for with a revision
	// above the cursor, in revision order, each once; at most the limit
	// asked for.
	Events []Event
	// Next is the cursor to ask with next: every change within the prefix
	// up to revision Next is in Events or was before the cursor. It is
	// Revision once the page reached the newest change.
	Next uint64
	// Oldest is the oldest cursor the store still answers: it keeps every
	// change after revision Oldest.
	Oldest uint64
	// Revision is the store's revision when the page was read.
	Revision uint64
	// Resync says the cursor is older than Oldest: changes after it are no
	// longer kept, so Events is empty and the reader must treat everything
	// below its prefix as changed, then continue from Next (Revision).
	Resync bool
}
