package store

import (
	"context"
	"io"
	"io/fs"
	"time"
)

// Store is the depot's namespace and content. Implementations are safe for
// concurrent use by multiple goroutines; every method that touches storage
// takes a context and stops early when it is cancelled.
//
// Writes are atomic and durable: when Put, PutBatch, PutChunk (completing an upload),
// Declare, Remove, Copy or Move returns nil, the change is committed, and any reader sees
// either the state before or the state after it, never a mix.
type Store interface {
	// Stat returns the entry at a clean path, or an error wrapping
	// ErrNotExist.
	Stat(ctx context.Context, path string) (Entry, error)

	// ReadDir returns the children of a directory sorted by name, or an
	// error wrapping ErrNotExist or ErrNotDir.
	ReadDir(ctx context.Context, dir string) ([]Entry, error)

	// Open returns the content of a file as it is now. The Content keeps
	// reading those bytes until it is closed, even if the entry is updated or
	// removed meanwhile. Errors wrap ErrNotExist, ErrIsDir or ErrNotPresent.
	Open(ctx context.Context, path string) (Content, error)

	// Put stores a whole file at a path, creating its parent directories.
	// A store with size limits refuses content that cannot fit with an
	// error wrapping ErrLimit, changing nothing, and evicts least recently
	// used unpinned content to make room, in the same atomic change
	// (PutResult.Evicted, EventEvicted).
	Put(ctx context.Context, req PutRequest) (PutResult, error)

	// PutBatch stores several whole files in one atomic change: each
	// request applies, in order, exactly as Put would apply it (a later
	// request for the same path sees the earlier one), and either all of
	// them apply or none does. When one request is refused, PutBatch fails
	// with a *BatchError naming it and wrapping the error Put would have
	// returned; nothing is stored or evicted. The results are in request
	// order. An empty batch changes nothing.
	PutBatch(ctx context.Context, reqs []PutRequest) ([]PutResult, error)

	// PutChunk stores one chunk of a chunked upload. Chunks may arrive in
	// any order and be retried with identical bytes. The file becomes
	// visible, atomically, only when the last missing chunk arrives and the
	// whole content matches the declared SHA-256; then the progress is
	// Complete and carries the PutResult. The chunks of uploads in
	// progress count against a store size limit: a chunk that would take
	// stored content and received chunks together over it evicts as Put
	// does (EventEvicted), or fails with ErrLimit and is not stored. The
	// last missing chunk is always let in; completing evicts as Put does.
	PutChunk(ctx context.Context, c Chunk) (UploadProgress, error)

	// Declare records files and directories an agent says it has, without
	// their content (see Declaration). All declarations apply, or none.
	Declare(ctx context.Context, req DeclareRequest) (DeclareResult, error)

	// Remove deletes the entry at path; a non-empty directory only when
	// req.Recursive is set. Parent directories created only as parents
	// disappear with their last child.
	Remove(ctx context.Context, req RemoveRequest) error

	// Copy makes req.To a copy of the file, or the whole directory tree, at
	// req.From, in one atomic change. Copies share the source's content:
	// no bytes are duplicated, whatever the size. See CopyRequest.
	Copy(ctx context.Context, req CopyRequest) (CopyResult, error)

	// Move renames the file, or the whole directory tree, at req.From to
	// req.To, in one atomic change: readers see the old tree or the new
	// one, never both or neither. See MoveRequest.
	Move(ctx context.Context, req MoveRequest) (CopyResult, error)

	// Revision returns the store's current revision: the revision of the
	// last committed change, 0 for an empty new store.
	Revision(ctx context.Context) (uint64, error)

	// Stats returns the store's counts, sizes, cumulative counters and
	// configured limits (see Stats).
	Stats(ctx context.Context) (Stats, error)

	// Watch yields, in revision order, the changes with a revision greater
	// than sinceRev to paths within prefix (see depotpath.Within), until ctx
	// is done or the store is closed; then the channel is closed. A watcher
	// that falls behind, or asks for history the store no longer keeps,
	// receives one EventResync and continues from the current revision;
	// writers never wait for watchers.
	Watch(ctx context.Context, prefix string, sinceRev uint64) (<-chan Event, error)

	// Changes reads the kept changes within prefix (see depotpath.Within)
	// with a revision above after, in revision order, at most limit of
	// them (limit < 1 means one). What it reads is kept with the depot,
	// not by this process: the same cursor gets the same changes after a
	// restart and on every host of a shared depot, for as long as the
	// store keeps them (the last changes, a number its options set).
	// A cursor older than that gets a page with Resync set, never a gap.
	// Repeated changes of one path within one commit may appear once.
	Changes(ctx context.Context, prefix string, after uint64, limit int) (ChangePage, error)

	// Versions reads earlier revisions, histories and snapshots.
	Versions

	// Close releases the store. Watch channels are closed; later calls fail
	// with ErrClosed.
	Close() error
}

// Content is a snapshot of one file's bytes. ReadAt is safe for concurrent
// use and reads only the requested range from storage.
type Content interface {
	io.ReaderAt
	io.Closer
	// Size is the content's length in bytes.
	Size() int64
	// SHA256 is the content's lowercase hex SHA-256.
	SHA256() string
}

// PutRequest is a whole file to store.
type PutRequest struct {
	Path string // clean depot path
	Data []byte

	// SHA256, when not empty, is the lowercase hex hash the content must
	// have; a mismatch fails with ErrHashMismatch and changes nothing.
	SHA256 string

	Mode     fs.FileMode // permission bits; 0 means the mount's default
	MTime    time.Time   // zero means the arrival time
	Encoding string      // how the agent sent the bytes: "utf-8" or "base64"
	Source   string      // provenance, shown as user.depotfs.source
	Writer   string      // identity of the caller
	Expires  time.Time   // zero: never
	Pinned   bool

	// IfRevision, when non-zero, makes the write conditional: it fails with
	// ErrRevision unless the entry's current Revision equals it.
	IfRevision uint64
	// IfAbsent makes the write fail with ErrExist if the path has an entry.
	IfAbsent bool
}

// PutStatus says what a Put did.
type PutStatus uint8

// The outcomes of a write.
const (
	// StatusCreated: the path had no file entry (or only a placeholder
	// created by a listing, whose content has now arrived).
	StatusCreated PutStatus = iota + 1
	// StatusUpdated: the file's content changed; Entry.Updates grew by one.
	StatusUpdated
	// StatusUnchanged: the file already had exactly these bytes; no content
	// was stored and Updates did not change. Changed metadata (mode, mtime,
	// pin, expiry) is still applied.
	StatusUnchanged
)

func (s PutStatus) String() string { return name(statusNames[:], int(s)) }

var statusNames = [...]string{StatusCreated: "created", StatusUpdated: "updated", StatusUnchanged: "unchanged"}

// PutResult reports a completed write.
type PutResult struct {
	Status PutStatus
	Entry  Entry // the entry after the write
	// Evicted is the content the write evicted to make room, committed
	// together with the write; zero when nothing was evicted.
	Evicted Evictions
}

// MaxEvictedPaths bounds Evictions.Paths.
const MaxEvictedPaths = 100

// Evictions reports content dropped by one write to stay within the store's
// size limit. Each evicted file stays in the tree as a placeholder (Present
// false) and is announced by an EventEvicted.
type Evictions struct {
	Count int   // files made placeholders; always exact
	Bytes int64 // stored (deduplicated) bytes freed
	// Paths are the evicted files in eviction order, least recently used
	// first; at most MaxEvictedPaths of them, so len(Paths) < Count when
	// more were evicted.
	Paths []string
}

// Chunk is one piece of a chunked upload. Index counts from 0 to Count-1;
// every chunk of one upload repeats the same UploadID, Count and File
// metadata. File.SHA256 (the whole content's hash) is required; File.Data is
// ignored.
type Chunk struct {
	UploadID string
	Index    int
	Count    int
	Data     []byte
	// TotalSize, when positive, is the whole file's size as the client
	// announces it. A store with a file size limit refuses an upload that
	// announces more (ErrLimit) at that chunk; chunks of one upload that
	// announce different sizes, or content that turns out to have another
	// size, fail with ErrUpload. 0 means not announced.
	TotalSize int64
	// SHA256, when not empty, is this chunk's own hash, checked on arrival.
	SHA256 string
	File   PutRequest
}

// UploadProgress reports the state of a chunked upload after a chunk.
type UploadProgress struct {
	UploadID string
	Path     string
	Received int   // distinct chunks stored so far
	Count    int   // chunks announced
	Bytes    int64 // bytes received so far
	// ChunkSHA256 is the hash of the chunk just stored, in lowercase hex,
	// as the store computed it to check and key the chunk: a caller that
	// reports it need not hash the chunk again.
	ChunkSHA256 string
	Complete    bool
	Result      PutResult // set when Complete
}

// Declaration is one file or directory an agent says it has. For a file
// with no entry, Declare creates a placeholder (Present false) with the
// declared size and mtime; for a present file whose declared Size, MTime or
// SHA256 (when given) differs from what is stored, the content is dropped
// and the entry becomes a stale placeholder until new content arrives. A
// directory becomes an explicit directory.
type Declaration struct {
	Path   string
	Kind   Kind
	Size   int64     // -1: unknown
	MTime  time.Time // zero: unknown
	Mode   fs.FileMode
	SHA256 string // "": unknown; a placeholder keeps it as Entry.DeclaredSHA256
}

// DeclareRequest is a batch of declarations from one listing.
type DeclareRequest struct {
	Entries []Declaration
	Writer  string
	Source  string
}

// DeclareResult counts what Declare did.
type DeclareResult struct {
	Created   int // new placeholders and directories
	Stale     int // present files whose content was dropped as out of date
	Unchanged int // entries that already matched
}

// RemoveRequest names an entry to remove.
type RemoveRequest struct {
	Path       string
	Recursive  bool
	IfRevision uint64 // as in PutRequest
	Writer     string
}

// Stats describes a whole store at one moment. Counts of entries and bytes
// are exact; Hits and Misses are counted in memory and persisted now and
// then, so after a crash they may have lost the last few seconds.
type Stats struct {
	Files        int64 // files with their content present
	Placeholders int64 // files without content: listed, stale or evicted
	Dirs         int64 // directories, not counting the root

	// StoredBytes is the content held, each distinct content counted once:
	// what counts against MaxStoreBytes.
	StoredBytes int64
	// LogicalBytes is the sum of the sizes of present files, as if
	// nothing were shared.
	LogicalBytes int64
	Blobs        int64 // distinct contents stored

	// Uploads and UploadBytes are the chunked uploads in progress and the
	// bytes they have received; these are not stored content and do not
	// count in StoredBytes, but StoredBytes plus UploadBytes is what
	// counts against MaxStoreBytes.
	Uploads     int64
	UploadBytes int64

	// Cumulative since the store was created; they survive restarts.
	Evictions    int64 // files made placeholders to make room
	EvictedBytes int64 // stored bytes freed by eviction
	Expiries     int64 // entries removed because they expired
	// SweptChunks are content chunks deleted because nothing referenced
	// them (left by a host that crashed between storing content and
	// committing it; store/nats only).
	SweptChunks int64
	Hits        int64 // Open of a present file
	Misses      int64 // Open of a placeholder

	// Versions are the retained versions that are not live (see
	// Versions); HeldBytes is the stored content only they reference,
	// counted in StoredBytes: at most what deleting every snapshot and
	// trimming every history would free. Snapshots counts the snapshots.
	// DirTimes counts the directory times kept for snapshots: the times a
	// directory had before an entry created or removed in it moved them,
	// while a snapshot shows them (never versions, never in History).
	Versions  int64
	HeldBytes int64
	Snapshots int64
	DirTimes  int64

	MaxStoreBytes int64 // the configured limit on StoredBytes; 0: none
	MaxFileBytes  int64 // the configured limit on one file; 0: none
}

// DedupSavedBytes is the storage deduplication saves: LogicalBytes minus
// StoredBytes.
func (s Stats) DedupSavedBytes() int64 { return s.LogicalBytes - s.StoredBytes }

// Streamer is implemented by stores that can take a whole file from a
// reader without holding it in memory, for uploads too large for one
// PutRequest. PutStream reads r to its end and then stores its bytes as Put
// would store req with Data set to them (req.Data is ignored): the same
// conditions, limits, eviction and result, in one atomic change once all
// the bytes have arrived. size, when not negative, is how many bytes r
// announces; r yielding another number fails with ErrUpload. A declared
// req.SHA256 that the bytes do not match fails with ErrHashMismatch. When
// r fails, or ctx ends, before its end, nothing is stored. Callers use
// PutChunk with stores that do not implement Streamer.
type Streamer interface {
	PutStream(ctx context.Context, req PutRequest, r io.Reader, size int64) (PutResult, error)

	// PutStreams stores the files next yields in one atomic change, as
	// PutBatch stores its requests (in order, all or none, a refused file
	// failing the call with a *BatchError naming it), once all have
	// arrived. Each file's bytes are read from its reader, to its end,
	// before next is called again; next returns io.EOF after the last
	// file. Any other error from next or from a reader stores nothing.
	// Memory stays bounded whatever the number and size of the files (an
	// archive unpacked as it arrives).
	PutStreams(ctx context.Context, next func() (PutRequest, io.Reader, error)) ([]PutResult, error)
}
