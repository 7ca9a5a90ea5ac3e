// Package inode numbers a store's entries the way every door onto the
// depot shows them: the FUSE mount (package vfs) and the NFS server
// (package nfsserver) report the same inode number for the same entry, so
// a program that compares inode numbers sees one filesystem whichever door
// it came through, and a number means the same entry after a restart.
//
// It is pure arithmetic over store.Entry values: no I/O, no state, safe
// for concurrent use.
package inode

import "github.com/depotfs/depotfs/store"

// VersionBit marks the number of a file version (see Of), keeping those
// numbers apart from the store's inode numbers, which directories use.
const VersionBit = 1 << 63

// Of returns the inode number of an entry of the live tree (or of a
// version read at an earlier revision). A directory has the store's inode
// number (store.Entry.Ino) for its whole life. Each version of a file has
// its own: the store revision that made it, with VersionBit set. So an
// update looks like an atomic rename-replace on a local filesystem (tail
// -F, and anything else that compares inode numbers, notices the new
// file), the number is unique in the depot, and it is the same after a
// restart. Neither kind of number is ever given to another entry: the
// store counts inode numbers and revisions up and never reuses them.
func Of(e store.Entry) uint64 {
	if e.IsDir() {
		return e.Ino
	}
	return VersionBit | e.Revision
}

// Revision returns the revision a file version's number (see Of) carries,
// and false for a number that is not a file version's.
func Revision(ino uint64) (uint64, bool) {
	if ino&VersionBit == 0 || ino&SnapshotBit != 0 {
		return 0, false
	}
	return ino &^ VersionBit, true
}

// Numbers in the snapshots directory. They must never meet the live
// tree's (directories: the store's inode numbers, counted up from 1;
// files: VersionBit and a revision) nor another snapshot's, which show the
// same entries. SnapshotBit marks them; the snapshots directory is that
// bit alone; a snapshot's entries carry the snapshot's number (see
// InSnapshot) in bits 40–61, and in bits 0–39 a directory's store inode
// number or, with bit 39 set, a file version's revision. That holds for
// stores below 2^39 revisions and fewer than 2^22 snapshot numbers; beyond
// those, numbers wrap and could collide.
const (
	SnapshotBit  = 1 << 62
	SnapshotsDir = SnapshotBit // the inode number of /.snapshots

	snapIDShift   = 40
	snapIDMask    = 1<<22 - 1
	snapFileBit   = 1 << 39
	snapEntryMask = snapFileBit - 1
)

// InSnapshot returns the inode number of entry e (as read at the
// snapshot's revision) in the snapshot numbered id. Who numbers the
// snapshots is the door's choice: the mount counts those it meets, so
// numbers never collide within one mount; a door whose numbers must
// survive a restart derives them from the snapshot's name and revision.
func InSnapshot(id uint64, e store.Entry) uint64 {
	base := SnapshotBit | (id&snapIDMask)<<snapIDShift
	if e.IsDir() {
		return base | e.Ino&snapEntryMask
	}
	return base | snapFileBit | e.Revision&snapEntryMask
}
