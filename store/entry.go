package store

import (
	"io/fs"
	"time"
)

// Kind says whether an entry is a file or a directory.
type Kind uint8

// The kinds of entry.
const (
	KindFile Kind = iota + 1
	KindDir
)

func (k Kind) String() string { return name(kindNames[:], int(k)) }

var kindNames = [...]string{KindFile: "file", KindDir: "directory"}

// name is names[i], "unknown" past the table or at an empty slot.
func name(names []string, i int) string {
	if i < len(names) && names[i] != "" {
		return names[i]
	}
	return "unknown"
}

// RootIno is the inode number of the root directory.
const RootIno uint64 = 1

// Entry is one file or directory in the depot. Entries are values: a Store
// returns copies, and changing one changes nothing in the store.
type Entry struct {
	Path string // clean depot path
	Kind Kind
	Ino  uint64 // stable for the path across restarts; RootIno for "/"

	Size   int64       // content size; for a placeholder, the declared size
	SHA256 string      // lowercase hex content hash; "" for directories and unknown content
	Mode   fs.FileMode // permission bits only (0 means the mount's default)
	// DeclaredSHA256 is, for a placeholder, the content hash the last
	// declaration that created or changed it gave (Declaration.SHA256);
	// "" when it gave none, and for present files and directories.
	DeclaredSHA256 string
	// MTime is the agent's mtime, else the arrival time. A directory's
	// MTime (and Updated) moves to the time of the change whenever an entry
	// is created in it, removed from it, or moved into or out of it, or a
	// file in it gets new content, and persists; that change carries no event and no new Revision of its
	// own (the child's event says the listing changed). The root's times
	// are zero until the first such change.
	MTime    time.Time
	Encoding string // how the agent sent the content: "utf-8" or "base64"
	Source   string // where the content came from (tool and upload id), for provenance

	Created time.Time // first creation of this path
	Updated time.Time // last change of content or metadata
	Updates uint64    // times the entry's content was replaced (0 when created)
	Writer  string    // identity that last wrote the entry

	Expires  time.Time // zero: never expires
	Pinned   bool      // exempt from eviction and expiry
	Present  bool      // content is stored (files); false for a placeholder (listed, stale or evicted)
	Explicit bool      // a directory created on purpose, not only as a parent

	Revision uint64 // store revision of the entry's last change
}

// IsDir reports whether e is a directory.
func (e Entry) IsDir() bool { return e.Kind == KindDir }
