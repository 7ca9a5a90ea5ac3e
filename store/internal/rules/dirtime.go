package rules

import (
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// DirTime is a directory's times before they moved at revision At: its
// mtime and ctime over the revisions below At, back to the DirTime of the
// same path before it (or the directory's creation). A store keeps them
// apart from the records, in an index of their own (see Txn.DirTimes), so
// they are never versions: moving a directory's times takes no revision
// and makes no history, yet a snapshot that saw the old times still shows
// them.
type DirTime struct {
	Path           string
	At             uint64
	MTime, Updated time.Time
}

// KeepDirTime reports whether a directory at dir whose times held since
// revision since (the later of its record's revision and the At of its
// newest DirTime) needs a DirTime when they move at revision at: a
// snapshot of snaps that covers dir was taken in between, so it saw them.
// Otherwise no reader of a snapshot can ask for them, and the times move
// in place with nothing kept.
func KeepDirTime(snaps []store.Snapshot, dir string, since, at uint64) bool {
	for _, s := range snaps {
		if s.Revision >= since && s.Revision < at && depotpath.Within(dir, s.Prefix) {
			return true
		}
	}
	return false
}

// DirTimeAt sets e's times to those its directory had at revision rev:
// ts are the DirTimes of its path, oldest first, and until is the
// revision that replaced or removed the record e shows (math.MaxUint64
// for the live one). The first DirTime after rev holds them, unless it
// belongs to a later record of the path; without one they are the
// record's own.
func DirTimeAt(e *store.Entry, ts []DirTime, rev, until uint64) {
	for _, d := range ts {
		if d.At > rev {
			if d.At < until {
				e.MTime, e.Updated = d.MTime, d.Updated
			}
			return
		}
	}
}

// releaseDirTimes drops the DirTimes within prefix that no snapshot of
// rest sees: none was taken between the DirTime before (or, for the
// oldest, revision 0: the directory's creation is not at hand, so that
// one stays while any covering snapshot is older) and its At.
func releaseDirTimes(t Txn, prefix string, rest []store.Snapshot) error {
	ts, err := t.DirTimes(prefix)
	if err != nil {
		return err
	}
	var path string
	var since uint64
	for _, d := range ts {
		if d.Path != path {
			path, since = d.Path, 0
		}
		if KeepDirTime(rest, d.Path, since, d.At) {
			since = d.At
			continue
		}
		if err := t.DropDirTime(d); err != nil {
			return err
		}
	}
	return nil
}
