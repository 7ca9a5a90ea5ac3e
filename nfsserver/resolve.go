package nfsserver

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	iofs "io/fs"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/inode"
)

// snapshotsName is the export root's hidden directory of snapshots, as in
// the mount: reachable by name, not listed (a walk of the export would
// otherwise walk every snapshot too).
var snapshotsName = depotpath.Base(store.SnapshotsDir)

// badName stands in for a slash or NUL inside one name handed to Join:
// such a name can never be a depot name, and the component it ends up in
// fails validation, so "a/b" looked up as one name never reaches a/b.
const badName = "\x00"

// loc is where a path of the export leads.
type loc struct {
	kind  uint8          // kindLive, kindSnapshot or kindSnapshots
	depot string         // the depot path (kindLive, kindSnapshot)
	snap  store.Snapshot // kindSnapshot: the snapshot read
	top   bool           // kindSnapshot: the snapshot's own directory
}

// split turns an export path (components joined by Join) into checked
// names: each must be a clean depot name exactly as sent (no "..", no
// slash, no NUL, no control characters, not over 255 bytes, in NFC).
func split(p string) ([]string, error) {
	if p == "" || p == "/" {
		return nil, nil
	}
	names := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, n := range names {
		if c, err := depotpath.CleanName(n); err != nil || c != n {
			return nil, fmt.Errorf("nfs: name %q: %w", n, iofs.ErrNotExist)
		}
	}
	return names, nil
}

// resolve finds where export path p leads, refusing with an error
// wrapping fs.ErrNotExist what the grants do not show (its name is not
// revealed either).
func (s *Server) resolve(ctx context.Context, p string) (loc, error) {
	names, err := split(p)
	if err != nil {
		return loc{}, err
	}
	if len(names) == 0 || names[0] != snapshotsName {
		l := loc{kind: kindLive, depot: s.acc.prefix}
		for _, n := range names {
			l.depot = depotpath.Join(l.depot, n)
		}
		return l, s.show(l.depot, p)
	}
	if len(names) == 1 {
		return loc{kind: kindSnapshots}, nil
	}
	snap, top, err := s.snapshot(ctx, names[1])
	if err != nil {
		return loc{}, err
	}
	l := loc{kind: kindSnapshot, depot: top, snap: snap, top: len(names) == 2}
	for _, n := range names[2:] {
		l.depot = depotpath.Join(l.depot, n)
	}
	return l, s.show(l.depot, p)
}

// show is nil when the grants show depot path d (export path p).
func (s *Server) show(d, p string) error {
	if !s.acc.visible(d) {
		return fmt.Errorf("nfs: %s: %w", p, iofs.ErrNotExist)
	}
	return nil
}

// snapshots returns the snapshots the export shows, with the depot path
// each shows at .snapshots/NAME: a snapshot within the export prefix shows
// its own prefix (as in the mount), one that holds the whole export shows
// the export prefix; others, and expired ones, are not shown.
func (s *Server) snapshots(ctx context.Context) ([]store.Snapshot, []string, error) {
	all, err := s.st.Snapshots(ctx)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	var snaps []store.Snapshot
	var tops []string
	for _, sn := range all {
		if !sn.Expires.IsZero() && !now.Before(sn.Expires) {
			continue
		}
		top := sn.Prefix
		switch {
		case depotpath.Within(sn.Prefix, s.acc.prefix):
		case depotpath.Within(s.acc.prefix, sn.Prefix):
			top = s.acc.prefix
		default:
			continue
		}
		if s.acc.visible(top) {
			snaps, tops = append(snaps, sn), append(tops, top)
		}
	}
	return snaps, tops, nil
}

// snapshot finds the snapshot named name among those shown.
func (s *Server) snapshot(ctx context.Context, name string) (store.Snapshot, string, error) {
	snaps, tops, err := s.snapshots(ctx)
	if err != nil {
		return store.Snapshot{}, "", err
	}
	i := slices.IndexFunc(snaps, func(sn store.Snapshot) bool { return sn.Name == name })
	if i < 0 {
		return store.Snapshot{}, "", fmt.Errorf("nfs: snapshot %q: %w", name, iofs.ErrNotExist)
	}
	return snaps[i], tops[i], nil
}

// snapID numbers a snapshot for its inode numbers (inode.InSnapshot) from
// its name and revision, so the numbers are the same after a restart; a
// snapshot taken again under its name is another tree, with other numbers.
func snapID(sn store.Snapshot) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d", sn.Name, sn.Revision)
	return h.Sum64()
}

// stat returns the entry at l and its inode number.
func (s *Server) stat(ctx context.Context, l loc) (store.Entry, uint64, error) {
	switch l.kind {
	case kindSnapshots:
		return store.Entry{Path: store.SnapshotsDir, Kind: store.KindDir}, inode.SnapshotsDir, nil
	case kindSnapshot:
		e, err := s.st.StatAt(ctx, l.depot, l.snap.Revision)
		if errors.Is(err, store.ErrNotExist) && l.top {
			// A snapshot of a prefix that had no entry then shows an
			// empty directory, as in the mount.
			e, err = store.Entry{Path: l.depot, Kind: store.KindDir}, nil
		}
		if err != nil {
			return store.Entry{}, 0, err
		}
		return e, inode.InSnapshot(snapID(l.snap), e), nil
	}
	if l.depot == depotpath.Root {
		e, err := s.st.Stat(ctx, l.depot)
		if errors.Is(err, store.ErrNotExist) {
			e, err = store.Entry{Path: depotpath.Root, Kind: store.KindDir, Ino: store.RootIno}, nil
		}
		return e, inode.Of(e), err
	}
	e, err := s.st.Stat(ctx, l.depot)
	if err != nil {
		return store.Entry{}, 0, err
	}
	return e, inode.Of(e), nil
}

// gen is the generation a handle of l carries: the snapshot's revision
// below /.snapshots, else 0 (live inode numbers are never reused).
func (l loc) gen() uint64 {
	if l.kind == kindSnapshot {
		return l.snap.Revision
	}
	return 0
}
