package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	bbolt "go.etcd.io/bbolt"
)

// schemaVersion is the on-disk layout this package reads and writes.
// Version 1 had no counters and no lru, refs and expiry indexes; Open
// upgrades it by deriving them from the tree and the blobs (see migrate).
// Version 2 had no versions and snapshots buckets and 40-byte blob
// records (no version count): Open adds the buckets, and the old records
// read as used by no version. Builds that read 2 refuse 3 at Open rather
// than misread its blob records.
const schemaVersion = 3

// maxChunkSize bounds Options.ChunkSize.
const maxChunkSize = 64 << 20

// Bucket names.
var (
	bucketMeta    = []byte("meta")
	bucketTree    = []byte("tree")
	bucketBlobs   = []byte("blobs")
	bucketChunks  = []byte("chunks")
	bucketUploads = []byte("uploads")
	// bucketOrphans holds the hashes of blobs that may have lost their
	// last reference without their chunks being deleted yet (still open,
	// or being staged by an upload); Open sweeps them.
	bucketOrphans = []byte("orphans")
	// bucketLRU indexes the blobs eviction may drop (referenced, and by no
	// pinned entry): use number (8 bytes) + hash → empty, least recently
	// used first.
	bucketLRU = []byte("lru")
	// bucketHistoryLRU is bucketLRU for the evictable blobs only retained
	// versions use: eviction takes them first.
	bucketHistoryLRU = []byte("history-lru")
	// bucketRefs indexes the entries using each blob: hash + path →
	// empty, one key per present file, and hash + path + NUL + revision
	// (8 bytes) per retained version of one.
	bucketRefs = []byte("refs")
	// bucketExpiry indexes the files that may expire (an expiry set, not
	// pinned): expiry time (8 bytes) + path → empty, soonest first.
	bucketExpiry = []byte("expiry")
	// bucketVersions holds the retained versions of entries: tree key +
	// NUL + revision (8 bytes) → the revision that replaced it (8 bytes),
	// whether a snapshot holds it (1 byte) and the record, so a
	// directory's versions share its children's prefix and a path's
	// versions sort oldest first.
	bucketVersions = []byte("versions")
	// bucketSnapshots holds the snapshots: name → JSON store.Snapshot.
	bucketSnapshots = []byte("snapshots")
	// bucketDirTimes holds the times directories had before they moved
	// while a snapshot saw them (rules.DirTime): keyed as a version,
	// tree key + NUL + the revision they moved at (8 bytes), so a path's
	// sort oldest first and a directory's share its children's prefix;
	// the value is the mtime and the ctime, each as a record encodes it.
	// A file without it (written before it existed, opened read-only)
	// has none.
	bucketDirTimes = []byte("dirtimes")
)

// allBuckets are the top-level buckets of the file.
var allBuckets = [][]byte{bucketMeta, bucketTree, bucketBlobs, bucketChunks, bucketUploads, bucketOrphans, bucketLRU, bucketRefs, bucketExpiry, bucketVersions, bucketSnapshots, bucketHistoryLRU, bucketDirTimes, bucketChanges}

// Keys in the meta bucket.
var (
	keySchema   = []byte("schema")
	keyRevision = []byte("revision")
	keyInode    = []byte("inode")
	keyCounters = []byte("counters")
)

// hash is a raw SHA-256.
type hash [32]byte

// treeKey is an entry's key in the tree bucket: its parent directory, a NUL,
// and its name, so a directory's children share the prefix dirPrefix(dir).
func treeKey(p string) []byte {
	dir, name := depotpath.Split(p)
	return []byte(dir + "\x00" + name)
}

// dirPrefix is the tree key prefix of dir's children.
func dirPrefix(dir string) []byte { return []byte(dir + "\x00") }

// keyPath is the inverse of treeKey.
func keyPath(k []byte) string {
	dir, name, _ := strings.Cut(string(k), "\x00")
	return depotpath.Join(dir, name)
}

// chunkKey is the key of a blob's chunk i in the chunks bucket.
func chunkKey(h hash, i int64) []byte {
	k := make([]byte, 40)
	copy(k, h[:])
	binary.BigEndian.PutUint64(k[32:], uint64(i))
	return k
}

func u64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func u64bytes(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// record is an entry as stored in the tree bucket (see codec.go); the
// path is its key.
type record = entryrec.Record

// getEntry reads the entry at p from the tree bucket; nil when absent.
func getEntry(tree *bbolt.Bucket, p string, c sealer) (*record, error) {
	v := tree.Get(treeKey(p))
	if v == nil {
		return nil, nil
	}
	return decodeRecord(v, c)
}

// hasChildren reports whether dir has at least one entry.
func hasChildren(tree *bbolt.Bucket, dir string) bool {
	prefix := dirPrefix(dir)
	k, _ := tree.Cursor().Seek(prefix)
	return k != nil && bytes.HasPrefix(k, prefix)
}

// lookup returns the value at k and whether k exists (a stored value may
// be empty).
func lookup(b *bbolt.Bucket, k []byte) ([]byte, bool) {
	ck, v := b.Cursor().Seek(k)
	return v, ck != nil && bytes.Equal(ck, k)
}

// blobRecord is a blob's value in the blobs bucket.
type blobRecord struct {
	Size      int64
	Refs      uint64 // present files using the blob
	ChunkSize int64
	Pins      uint64 // pinned present files and held versions using the blob
	Use       uint64 // use number of the last read or write (see uses)
	Versions  uint64 // retained versions among the Refs
}

// blobRecordV1 is the length of a schema 1 blob record: Size, Refs and
// ChunkSize only.
const blobRecordV1 = 24

func (b blobRecord) encode() []byte {
	v := make([]byte, 48)
	binary.BigEndian.PutUint64(v[0:], uint64(b.Size))
	binary.BigEndian.PutUint64(v[8:], b.Refs)
	binary.BigEndian.PutUint64(v[16:], uint64(b.ChunkSize))
	binary.BigEndian.PutUint64(v[24:], b.Pins)
	binary.BigEndian.PutUint64(v[32:], b.Use)
	binary.BigEndian.PutUint64(v[40:], b.Versions)
	return v
}

// heldOnly reports whether only retained versions use the blob
// (store.Stats.HeldBytes).
func (b blobRecord) heldOnly() bool { return b.Refs > 0 && b.Refs == b.Versions }

// lruBucket is the name of the index the blob belongs in: history-lru
// when only versions use it, lru when a file does too, none (nil) when it
// is not evictable.
func (b blobRecord) lruBucket() []byte {
	switch {
	case !b.evictable():
		return nil
	case b.heldOnly():
		return bucketHistoryLRU
	}
	return bucketLRU
}

// evictable reports whether the blob belongs in an lru index.
func (b blobRecord) evictable() bool { return b.Refs > 0 && b.Pins == 0 }

// getBlob reads blob h's record; a schema 1 record (only during migrate)
// reads with Pins and Use 0.
func getBlob(blobs *bbolt.Bucket, h hash) (blobRecord, bool, error) {
	v := blobs.Get(h[:])
	if v == nil {
		return blobRecord{}, false, nil
	}
	if len(v) != 48 && len(v) != 40 && len(v) != blobRecordV1 {
		return blobRecord{}, false, fmt.Errorf("corrupt blob record %x", h)
	}
	b := blobRecord{
		Size:      int64(binary.BigEndian.Uint64(v[0:])),
		Refs:      binary.BigEndian.Uint64(v[8:]),
		ChunkSize: int64(binary.BigEndian.Uint64(v[16:])),
	}
	if len(v) >= 40 {
		b.Pins = binary.BigEndian.Uint64(v[24:])
		b.Use = binary.BigEndian.Uint64(v[32:])
	}
	if len(v) == 48 {
		b.Versions = binary.BigEndian.Uint64(v[40:])
	}
	if b.Size < 0 || b.ChunkSize <= 0 {
		return blobRecord{}, false, fmt.Errorf("corrupt blob record %x", h)
	}
	return b, true, nil
}

// versionKey is the key in the versions bucket of p's version written at
// revision rev.
func versionKey(p string, rev uint64) []byte {
	dir, name := depotpath.Split(p)
	k := make([]byte, 0, len(dir)+len(name)+10)
	k = append(append(append(append(k, dir...), 0), name...), 0)
	return binary.BigEndian.AppendUint64(k, rev)
}

// versionRef is the key in the refs bucket saying that p's version
// written at rev uses blob h.
func versionRef(h hash, p string, rev uint64) []byte {
	return binary.BigEndian.AppendUint64(append(refKey(h, p), 0), rev)
}

// lruKey is blob h's key in the lru bucket.
func lruKey(use uint64, h hash) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 40), use)
	return append(k, h[:]...)
}

// refKey is the key in the refs bucket saying that the file at p uses
// blob h.
func refKey(h hash, p string) []byte {
	return append(append(make([]byte, 0, 32+len(p)), h[:]...), p...)
}

// expiryKey is the key in the expiry bucket of the file at p expiring at
// t: Unix seconds offset by 2^63 (8 bytes) and nanoseconds (4 bytes), so
// that keys sort by time, then the path.
func expiryKey(t time.Time, p string) []byte {
	k := make([]byte, 0, expiryKeyTimeLen+len(p))
	k = binary.BigEndian.AppendUint64(k, uint64(t.Unix())^(1<<63))
	k = binary.BigEndian.AppendUint32(k, uint32(t.Nanosecond()))
	return append(k, p...)
}

// expiryKeyTimeLen is the length of the time at the start of an expiry key.
const expiryKeyTimeLen = 12

// expiryKeyTime is the time an expiry key starts with.
func expiryKeyTime(k []byte) time.Time {
	sec := int64(binary.BigEndian.Uint64(k) ^ (1 << 63))
	return time.Unix(sec, int64(binary.BigEndian.Uint32(k[8:]))).UTC()
}
