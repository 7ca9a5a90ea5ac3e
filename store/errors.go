package store

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrNotExist reports a path with no entry. It is fs.ErrNotExist, so callers
// may match either.
var ErrNotExist = fs.ErrNotExist

// ErrExist reports a write with IfAbsent set to a path that already has an
// entry. It is fs.ErrExist.
var ErrExist = fs.ErrExist

// ErrConflict reports a write that would make a path both a file and a
// directory: a file under an existing file, or a file over a directory.
var ErrConflict = errors.New("path is both a file and a directory")

// ErrRevision reports a conditional write (IfRevision) whose entry has changed
// since the revision the caller read.
var ErrRevision = errors.New("entry changed since the expected revision")

// ErrHashMismatch reports content whose SHA-256 differs from the one the
// caller declared.
var ErrHashMismatch = errors.New("content does not match its declared sha256")

// ErrNotPresent reports a read of a file whose content has not arrived yet (a
// placeholder created by a listing).
var ErrNotPresent = errors.New("file content is not present")

// ErrIsDir reports a content operation on a directory.
var ErrIsDir = errors.New("is a directory")

// ErrNotDir reports a directory operation on a file.
var ErrNotDir = errors.New("not a directory")

// ErrUpload reports a chunk that contradicts its upload: an index out of
// range, a different chunk count, path or whole-file hash than the first
// chunk announced, or a retried chunk with different bytes.
var ErrUpload = errors.New("chunk does not fit its upload")

// ErrClosed reports a call on a closed store.
var ErrClosed = errors.New("store is closed")

// ErrUnavailable reports a write that could not be committed in time
// because the store's servers cannot commit (a cluster that lost its
// quorum or its leader), or a read that could not learn in time whether
// the host's copy holds every acknowledged write: nothing in the request
// was wrong, and the same call may succeed once the servers recover. Alone it means the write
// changed nothing; with ErrOutcomeUnknown (which such an error then also
// wraps) the change was sent and its outcome is unknown.
var ErrUnavailable = errors.New("the store's cluster cannot commit writes now (no quorum)")

// ErrOutcomeUnknown reports a write that was sent to the store's servers
// but whose outcome the store could not learn within its time limit: it
// may have been applied, or may still be applied once the servers
// recover, or never. Such an error wraps ErrUnavailable too. Read the
// path back (or repeat a write with its expected revision) rather than
// repeat a change that is not idempotent.
var ErrOutcomeUnknown = errors.New("the write was sent, but whether it was applied is unknown")

// ErrCorrupt reports content the store holds but will not serve because
// it fails its integrity check: a sealed chunk whose authentication tag
// does not match, changed or damaged on disk. It is never returned with
// bytes. Reading again gives the same error; the content comes back only
// from a backup. The store counts and logs such chunks itself.
var ErrCorrupt = errors.New("stored content failed its integrity check")

// CorruptMessage is what a reader is told of content at depot path p (""
// when unknown) that failed its integrity check (ErrCorrupt), in the same
// words by every door that has room for words (the tools, resources/read,
// WebDAV and resource links). It says what a reader cannot learn
// otherwise: the error is not transient, so a retry is wasted, and only
// the operator can bring the content back. The store's own text names
// chunks, which tell a reader nothing.
func CorruptMessage(p string) string {
	what := "this file"
	if p != "" {
		what = p
	}
	return "the stored content of " + what + " failed its integrity check (a sealed chunk was changed or damaged on disk); retrying will not help: the depotfs operator must restore it from a backup"
}

// ErrNotEmpty reports a Remove of a directory that still has entries, without
// RemoveRequest.Recursive.
var ErrNotEmpty = errors.New("directory not empty")

// ErrLimit reports a write that cannot fit the store's size limits: a file
// over the per-file limit (for a chunked upload, as soon as a chunk
// announces or delivers more), content larger than the whole store limit,
// or content eviction cannot make room for because what else is stored is
// pinned. A refused write changes nothing: nothing is stored and nothing
// evicted. The chunks of uploads in progress count against the store
// limit as stored content does; a chunk refused for want of room may
// succeed later, once other uploads complete or expire.
var ErrLimit = errors.New("over the store's size limit")

// ErrBatchLimit reports a change (a batch of files, a directory's copy,
// move or removal, a listing) that writes more records than one commit
// of the store can hold; the message names that limit. It wraps ErrLimit.
// Nothing was changed: the same files in several smaller calls fit.
var ErrBatchLimit = fmt.Errorf("%w: the change is larger than one commit of the store holds", ErrLimit)

// BatchError reports the request that made a PutBatch fail; nothing of the
// batch was stored. Err is what Put would have returned for that request,
// so errors.Is(err, ErrLimit) and the like see through a BatchError.
type BatchError struct {
	Index int    // the refused request's position in the batch
	Path  string // its path
	Err   error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("batch entry %d (%s): %v", e.Index, e.Path, e.Err)
}

// Unwrap returns e.Err.
func (e *BatchError) Unwrap() error { return e.Err }
