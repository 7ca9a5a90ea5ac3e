package nfsserver

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/fnv"
)

// ErrBadHandle reports a handle this server did not make: wrong length,
// version or kind, or made for another export.
var ErrBadHandle = errors.New("nfs: not a handle of this export")

// ErrStale reports a handle whose entry is gone: removed, replaced by
// another entry of the same name, or a version the store no longer keeps.
var ErrStale = errors.New("nfs: stale handle")

// handleVersion is the first byte of every handle; a later layout takes
// another value, so old handles fail cleanly instead of being misread.
const handleVersion = 0xd1

// Handle kinds.
const (
	kindLive      = 1 // an entry of the live tree, or an earlier version of a file
	kindSnapshot  = 2 // an entry below /.snapshots/NAME
	kindSnapshots = 3 // /.snapshots itself
)

// handleLen is the length of every handle: well within NFSv3's 64 bytes,
// and a multiple of 4, so no XDR padding follows it (go-nfs reads the
// argument after a handle without skipping padding). The last two bytes
// are zero.
const handleLen = 40

// handle is a decoded file handle. key is a digest of the export tag and
// the entry's path in the export, which the handle table maps back to the
// path; ino and gen say which entry the path must still hold.
type handle struct {
	kind uint8
	tag  uint32
	ino  uint64
	gen  uint64
	key  [16]byte
}

// exportTag identifies an export by its prefix: a handle made for another
// export (another prefix) is refused before its key is looked up.
func exportTag(prefix string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(prefix))
	return h.Sum32()
}

// pathKey is the table key of path p in the export tagged tag.
func pathKey(tag uint32, p string) [16]byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], tag)
	h := sha256.New()
	h.Write(b[:])
	h.Write([]byte(p))
	var k [16]byte
	copy(k[:], h.Sum(nil))
	return k
}

func (h handle) encode() []byte {
	b := make([]byte, handleLen)
	b[0], b[1] = handleVersion, h.kind
	binary.BigEndian.PutUint32(b[2:], h.tag)
	binary.BigEndian.PutUint64(b[6:], h.ino)
	binary.BigEndian.PutUint64(b[14:], h.gen)
	copy(b[22:], h.key[:])
	return b
}

// decodeHandle parses b, checking its shape and its export tag.
func decodeHandle(b []byte, tag uint32) (handle, error) {
	if len(b) != handleLen || b[0] != handleVersion || b[1] < kindLive || b[1] > kindSnapshots || b[38] != 0 || b[39] != 0 {
		return handle{}, ErrBadHandle
	}
	h := handle{kind: b[1], tag: binary.BigEndian.Uint32(b[2:]), ino: binary.BigEndian.Uint64(b[6:]), gen: binary.BigEndian.Uint64(b[14:])}
	copy(h.key[:], b[22:])
	if h.tag != tag {
		return handle{}, ErrBadHandle
	}
	return h, nil
}
