package vfs

import (
	"crypto/sha256"
	"encoding/hex"
	iofs "io/fs"
	"strings"
	"time"

	"github.com/depotfs/depotfs/store"
)

// fileVersion is what a fileNode keeps of its entry: the fields that
// attributes, extended attributes and opens need, in less than half the
// space of a store.Entry (the kernel may know hundreds of thousands of
// files, and go-fuse keeps a node for each).
type fileVersion struct {
	path, source, encoding string
	// sum is the content hash of a present file, the declared hash of a
	// placeholder; zero when unknown.
	sum [sha256.Size]byte

	size             int64
	rev              uint64
	mtimeS, ctimeS   int64 // Unix seconds; see stamp
	mtimeNs, ctimeNs int32
	mode             iofs.FileMode
	present          bool
}

// newFileVersion is the version of e. It copies e's path: the entries of
// a store's ReadDir may share one string (see store/bolt), and a node
// lives as long as the kernel keeps its inode.
func newFileVersion(e store.Entry) fileVersion {
	sum := e.SHA256
	if !e.Present {
		sum = e.DeclaredSHA256
	}
	var raw [sha256.Size]byte
	if len(sum) == 2*sha256.Size {
		hex.Decode(raw[:], []byte(sum))
	}
	return versionOf(e, strings.Clone(e.Path), raw)
}

// rawVersion is the version of a listing's entry r, whose path is its own
// and whose hashes are raw: nothing is copied or spelled.
func rawVersion(r *store.RawEntry) fileVersion {
	sum := r.Sum
	if !r.Present {
		sum = r.Declared
	}
	return versionOf(r.Entry, r.Path, sum)
}

// versionOf is the version of e at path with the hash sum (see
// fileVersion.sum).
func versionOf(e store.Entry, path string, sum [sha256.Size]byte) fileVersion {
	v := fileVersion{path: path, source: e.Source, encoding: e.Encoding, sum: sum,
		size: e.Size, rev: e.Revision, mode: e.Mode, present: e.Present}
	v.mtimeS, v.mtimeNs = stamp(e.MTime)
	v.ctimeS, v.ctimeNs = stamp(e.Updated)
	return v
}

// entry returns the version as a store.Entry, with the fields it keeps.
func (v *fileVersion) entry() store.Entry {
	return store.Entry{Path: v.path, Kind: store.KindFile, SHA256: v.sha256(), DeclaredSHA256: v.declared(), Source: v.source, Encoding: v.encoding,
		Size: v.size, Revision: v.rev, Mode: v.mode, Present: v.present,
		MTime: unstamp(v.mtimeS, v.mtimeNs), Updated: unstamp(v.ctimeS, v.ctimeNs)}
}

// sha256 returns the content hash as the store spells it: lowercase hex,
// "" when unknown (a placeholder).
func (v *fileVersion) sha256() string {
	if !v.present {
		return ""
	}
	return v.hex()
}

// declared returns a placeholder's declared hash; "" when none (and for a
// present file).
func (v *fileVersion) declared() string {
	if v.present {
		return ""
	}
	return v.hex()
}

func (v *fileVersion) hex() string {
	if v.sum == ([sha256.Size]byte{}) {
		return ""
	}
	return hex.EncodeToString(v.sum[:])
}

// stamp and unstamp store a time in 12 bytes; the zero time is (0, -1).
func stamp(t time.Time) (int64, int32) {
	if t.IsZero() {
		return 0, -1
	}
	return t.Unix(), int32(t.Nanosecond())
}

func unstamp(s int64, ns int32) time.Time {
	if ns < 0 {
		return time.Time{}
	}
	return time.Unix(s, int64(ns)).UTC()
}

// holds reports whether c is this version's content.
func (v *fileVersion) holds(c store.Content) bool {
	return v.present && c.SHA256() == v.sha256() && c.Size() == v.size
}

// same reports whether w has the same content as v (metadata aside).
func (v *fileVersion) same(w fileVersion) bool {
	return v.present == w.present && v.sum == w.sum && v.size == w.size
}
