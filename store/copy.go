package store

// CopyRequest names an entry to copy and where the copy goes. Like the
// other requests it is a plain value; a Store does not retain it.
//
// A file is copied to a file; a directory is copied with everything below
// it, explicit empty directories and placeholders included. Each copy is a
// new entry (its own inode, created now, Updates 0, written by Writer) with
// the source's content, size, mode, mtime, encoding, expiry and pin.
// Parents of To are created as implicit directories, as Put does.
//
// To may replace an existing file only when From is a file and IfAbsent is
// not set; the replaced file keeps its inode and its Updates count grows.
// Any other entry at To fails the call: a directory with ErrConflict when
// From is a file, anything with ErrExist when From is a directory. From and
// To must differ, neither may be the root, and To may not lie inside From
// (fs.ErrInvalid), except for a restore (FromRevision set), which may
// copy a file's earlier version over the file itself.
type CopyRequest struct {
	From, To string // clean depot paths

	// FromRevision, when not 0, copies the version of the file From that
	// was live at that revision (see Versions.StatAt) instead of the live
	// one; the copy is a new revision of To, so restoring a version is
	// Copy{From: p, FromRevision: r, To: p}. IfRevision then applies to
	// that version. A directory's earlier version is refused
	// (fs.ErrInvalid).
	FromRevision uint64

	// IfAbsent makes the call fail with ErrExist if To has an entry.
	IfAbsent bool
	// IfRevision, when non-zero, makes the call conditional on From: it
	// fails with ErrRevision unless From's entry is at this revision.
	IfRevision uint64

	Writer string // identity of the caller, recorded on every copy
	// Source, when not empty, replaces the provenance of every copy;
	// otherwise each copy keeps its source entry's.
	Source string
}

// MoveRequest names an entry to rename and its new path. The rules of
// CopyRequest apply to From, To and the entry at To. The moved entries keep
// their metadata (created time, Updates, writer excepted) and get new
// inodes, as inodes are stable per path; implicit parents of From left
// without children are removed.
type MoveRequest struct {
	From, To   string
	IfAbsent   bool
	IfRevision uint64
	Writer     string
}

// CopyResult reports a completed Copy or Move.
type CopyResult struct {
	// Status is StatusCreated when To had no entry, StatusUpdated when a
	// file at To was replaced.
	Status PutStatus
	// Entry is the entry at To after the change.
	Entry Entry
	// Entries counts the entries written under To, To included.
	Entries int
	// Bytes is the total size of the files whose content was copied or
	// moved: what a byte-by-byte copy would have written. The store
	// writes none of it; the copies share the content.
	Bytes int64
}
