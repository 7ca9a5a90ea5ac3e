// Package check validates store requests before a store touches its data:
// paths, hashes, sizes against the limits, whole-file writes, upload
// chunks, declarations, copy and move paths. Every store implementation
// calls it, so a request is refused the same way by each, with the same
// error values. It holds no state and reads no store.
package check

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// MaxUploadID bounds the length of store.Chunk.UploadID in bytes.
const MaxUploadID = 256

// PathError wraps err as an *fs.PathError for op and path, unless it
// already is one; nil stays nil.
func PathError(op, path string, err error) error {
	if err == nil || errors.As(err, new(*fs.PathError)) {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// Path fails with an *fs.PathError wrapping depotpath.ErrInvalid unless p
// is a clean depot path.
func Path(op, p string) error {
	c, err := depotpath.Clean(p)
	if err != nil {
		if errors.Is(err, depotpath.ErrInvalid) {
			return &fs.PathError{Op: op, Path: p, Err: err}
		}
		return &fs.PathError{Op: op, Path: p, Err: fmt.Errorf("%w: %w", depotpath.ErrInvalid, err)}
	}
	if c != p {
		return &fs.PathError{Op: op, Path: p, Err: fmt.Errorf("%w: not clean (clean form is %q)", depotpath.ErrInvalid, c)}
	}
	return nil
}

// FilePath is Path for a path a file is written to: the root, always a
// directory, fails with store.ErrConflict; a path at or below
// store.SnapshotsDir fails (see Writable).
func FilePath(op, p string) error {
	if err := Writable(op, p); err != nil {
		return err
	}
	if p == depotpath.Root {
		return PathError(op, p, errRootIsDir)
	}
	return nil
}

// Writable is Path for a path a write creates or changes: store.SnapshotsDir
// and everything below it are reserved for the snapshots a mount shows
// there, and fail with an error wrapping depotpath.ErrInvalid.
func Writable(op, p string) error {
	if err := Path(op, p); err != nil {
		return err
	}
	if depotpath.Within(p, store.SnapshotsDir) {
		return PathError(op, p, fmt.Errorf("%w: %s is reserved for snapshots", depotpath.ErrInvalid, store.SnapshotsDir))
	}
	return nil
}

var errRootIsDir = fmt.Errorf("%w: the root is a directory", store.ErrConflict)

// Hash fails unless s is a SHA-256 as stores write it: 64 lowercase hex
// digits. The error wraps no sentinel; callers say what kind of request
// it spoils.
func Hash(s string) error {
	if len(s) != 64 {
		return fmt.Errorf("sha256 %q is not 64 hex digits", s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("sha256 %q is not lowercase hex", s)
		}
	}
	return nil
}

// Limits are a store's size limits, in bytes (0 means none), and the
// history it keeps.
type Limits struct {
	MaxFileBytes  int64 // one file's content
	MaxStoreBytes int64 // all stored content
	// KeepVersions is how many superseded versions of each file are kept
	// besides the live one (store.Versions); 0: none.
	KeepVersions int
	// MaxRecords bounds the records one commit may write (nats's batch);
	// 0: none. Work that may exceed it, a snapshot's release, is split.
	MaxRecords int
}

// Size fails with store.ErrLimit for content of size bytes that can never
// be stored.
func (l Limits) Size(size int64) error {
	if lim := l.MaxFileBytes; lim > 0 && size > lim {
		return fmt.Errorf("%w: %d bytes, the file size limit is %d", store.ErrLimit, size, lim)
	}
	if lim := l.MaxStoreBytes; lim > 0 && size > lim {
		return fmt.Errorf("%w: %d bytes, the store size limit is %d", store.ErrLimit, size, lim)
	}
	return nil
}

// Put validates a whole-file write (store.Store.Put, PutBatch) and returns
// the content's hash, in lowercase hex: the path, the size, and the hash
// the request declares.
func (l Limits) Put(req store.PutRequest) (string, error) {
	if err := FilePath("put", req.Path); err != nil {
		return "", err
	}
	if err := l.Size(int64(len(req.Data))); err != nil {
		return "", PathError("put", req.Path, err)
	}
	h := sha256.Sum256(req.Data)
	sum := hex.EncodeToString(h[:])
	if req.SHA256 != "" && req.SHA256 != sum {
		return "", PathError("put", req.Path, fmt.Errorf("%w: declared %s, content has %s", store.ErrHashMismatch, req.SHA256, sum))
	}
	return sum, nil
}

// Chunk validates one chunk of a chunked upload (store.Store.PutChunk) as
// far as it can be without the upload's earlier chunks, and returns the
// chunk's hash.
func (l Limits) Chunk(c store.Chunk) ([sha256.Size]byte, error) {
	p := c.File.Path
	if err := Writable("putchunk", p); err != nil {
		return [sha256.Size]byte{}, err
	}
	if err := chunkFields(c); err != nil {
		return [sha256.Size]byte{}, PathError("putchunk", p, err)
	}
	if err := l.Size(max(c.TotalSize, int64(len(c.Data)))); err != nil {
		return [sha256.Size]byte{}, PathError("putchunk", p, err)
	}
	sum := sha256.Sum256(c.Data)
	if c.SHA256 != "" {
		if got := hex.EncodeToString(sum[:]); got != c.SHA256 {
			return [sha256.Size]byte{}, PathError("putchunk", p, fmt.Errorf("%w: chunk %d declared %s, has %s", store.ErrHashMismatch, c.Index, c.SHA256, got))
		}
	}
	return sum, nil
}

// chunkFields checks what a chunk says about its upload.
func chunkFields(c store.Chunk) error {
	switch {
	case c.UploadID == "":
		return fmt.Errorf("%w: empty upload id", store.ErrUpload)
	case len(c.UploadID) > MaxUploadID:
		return fmt.Errorf("%w: upload id over %d bytes", store.ErrUpload, MaxUploadID)
	case c.Count < 1:
		return fmt.Errorf("%w: chunk count %d", store.ErrUpload, c.Count)
	case c.Index < 0 || c.Index >= c.Count:
		return fmt.Errorf("%w: chunk index %d outside 0..%d", store.ErrUpload, c.Index, c.Count-1)
	case c.File.Path == depotpath.Root:
		return errRootIsDir
	case c.File.SHA256 == "":
		return fmt.Errorf("%w: the whole file's sha256 is required", store.ErrUpload)
	case c.TotalSize < 0:
		return fmt.Errorf("%w: total size %d", store.ErrUpload, c.TotalSize)
	}
	if err := Hash(c.File.SHA256); err != nil {
		return fmt.Errorf("%w: %w", store.ErrUpload, err)
	}
	return nil
}

// Declarations validates every declaration of a store.DeclareRequest, in
// order, and fails on the first bad one.
func Declarations(ds []store.Declaration) error {
	for _, d := range ds {
		if err := Writable("declare", d.Path); err != nil {
			return err
		}
		var err error
		switch {
		case d.Kind != store.KindFile && d.Kind != store.KindDir:
			err = fmt.Errorf("%w: unknown kind %d", fs.ErrInvalid, d.Kind)
		case d.Size < -1:
			err = fmt.Errorf("%w: size %d", fs.ErrInvalid, d.Size)
		case d.SHA256 != "":
			if herr := Hash(d.SHA256); herr != nil {
				err = fmt.Errorf("%w: %w", fs.ErrInvalid, herr)
			}
		}
		if err == nil && d.Path == depotpath.Root && d.Kind == store.KindFile {
			err = errRootIsDir
		}
		if err != nil {
			return PathError("declare", d.Path, err)
		}
	}
	return nil
}

// Transfer validates the paths of a copy or a move (op "copy" or "move"):
// neither may be the root, the destination may not be reserved
// (Writable), and it may neither be the source, unless restore (a copy of
// an earlier version of the source over it), nor lie inside it.
func Transfer(op, from, to string, restore bool) error {
	if err := Path(op, from); err != nil {
		return err
	}
	if err := Writable(op, to); err != nil {
		return err
	}
	switch {
	case from == depotpath.Root || to == depotpath.Root:
		return PathError(op, depotpath.Root, fmt.Errorf("%w: the root cannot be copied, moved or replaced", fs.ErrInvalid))
	case from == to && restore:
	case from == to:
		return PathError(op, to, fmt.Errorf("%w: source and destination are the same path", fs.ErrInvalid))
	case depotpath.Within(to, from):
		return PathError(op, to, fmt.Errorf("%w: the destination lies inside the source %s", fs.ErrInvalid, from))
	}
	return nil
}

// Remove validates the path of a removal: the root cannot be removed.
func Remove(p string) error {
	if err := Path("remove", p); err != nil {
		return err
	}
	if p == depotpath.Root {
		return PathError("remove", p, fmt.Errorf("%w: the root cannot be removed", fs.ErrInvalid))
	}
	return nil
}

// MaxSnapshotName bounds the length of a snapshot's name in bytes.
const MaxSnapshotName = 64

// SnapshotName fails with an error wrapping fs.ErrInvalid unless name is
// 1 to MaxSnapshotName of [A-Za-z0-9._-], and not "." or "..": a name that
// is one path element wherever it is shown.
func SnapshotName(name string) error {
	bad := name == "" || len(name) > MaxSnapshotName || name == "." || name == ".."
	for i := 0; i < len(name) && !bad; i++ {
		c := name[i]
		bad = !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if bad {
		return fmt.Errorf("%w: snapshot name %q: want 1 to %d of A-Z a-z 0-9 . _ - (and not . or ..)", fs.ErrInvalid, name, MaxSnapshotName)
	}
	return nil
}

// Snapshot validates a snapshot request and returns its prefix, "/" for
// none.
func Snapshot(req store.SnapshotRequest) (string, error) {
	if err := SnapshotName(req.Name); err != nil {
		return "", err
	}
	prefix := req.Prefix
	if prefix == "" {
		prefix = depotpath.Root
	}
	return prefix, Path("snapshot", prefix)
}
