package nfsserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	iofs "io/fs"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	billy "github.com/go-git/go-billy/v5"
	lru "github.com/hashicorp/golang-lru/v2"
	nfs "github.com/willscott/go-nfs"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/inode"
)

// ErrGrant reports a grant the NFS server cannot take: one that allows
// writing (the export is read-only), or one outside the export prefix.
var ErrGrant = errors.New("nfs: invalid grant")

// Options configure a Server. HandleTable is required; the zero value of
// every other field works: the whole depot exported to whoever reaches the
// listener, files 0444 and directories 0555 owned by root.
type Options struct {
	// Prefix is the depot path exported as the root; "" means "/".
	Prefix string
	// Grants are what the export shows, each read-only (TOOL:PREFIX:r,
	// with TOOL "nfs" or "*") and within Prefix; nil means one grant of
	// the whole prefix. NFSv3 clients have no credentials worth the name,
	// so these are the operator's, the same for every client.
	Grants []grant.Grant
	// Host is the server's --allow/--deny policy, which bounds Grants as
	// it bounds every caller's; nil allows everything.
	Host *policy.Host

	// HandleTable is the file that maps handles to paths (created if
	// missing), so handles survive restarts.
	HandleTable string

	// Fetcher, when set, is asked for the content of a placeholder a
	// client reads; the read waits for it (bounded by the fetcher's
	// timeout). nil: such reads fail with NFS3ERR_IO.
	Fetcher Fetcher

	// UID and GID own every entry; Umask clears permission bits, as in
	// the mount (vfs.Options).
	UID, GID uint32
	Umask    iofs.FileMode

	// Audit, when set, receives one record per MOUNT request, allowed or
	// refused (see docs/nfs.md for why reads are not recorded one by one).
	Audit audit.Appender

	// Logger receives unexpected errors; nil means slog.Default().
	Logger *slog.Logger
}

// Fetcher obtains the content of a placeholder (see vfs.Fetcher; depotfs
// wires the same fetch broker to both doors).
type Fetcher interface {
	// Fetch returns the content of the file at the clean depot path p,
	// waiting for a placeholder's content to arrive, or an error wrapping
	// store.ErrNotPresent when it did not in time.
	Fetch(ctx context.Context, p string) (store.Content, error)
}

// Caches kept in memory: the handles of recently listed or looked-up
// paths (so a listing does not stat each entry again to hand out its
// handle), and the listings of large directories being paged through.
const (
	recentSize   = 1 << 16
	listingsSize = 8
	handleLimit  = 1 << 20
)

// Server serves one export over NFSv3. Its methods are safe for concurrent
// use.
type Server struct {
	st      store.Store
	opts    Options
	acc     access
	tag     uint32
	log     *slog.Logger
	started time.Time
	table   *table
	live    *view

	recent   *lru.Cache[string, handle]            // export path: its handle, without key
	listings *lru.Cache[listingKey, []os.FileInfo] // pages of a listing (CachingHandler)

	ctx    context.Context // cancelled by Close: stops reads in progress
	cancel context.CancelFunc

	mu     sync.Mutex // guards conns, lns and closed
	conns  map[net.Conn]struct{}
	lns    []net.Listener
	closed bool
}

type listingKey struct {
	path     string
	verifier uint64
}

var (
	_ nfs.Handler        = (*Server)(nil)
	_ nfs.CachingHandler = (*Server)(nil)
)

// New returns a server of st's export described by opts. Close it to
// release the handle table.
func New(st store.Store, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	prefix, err := depotpath.Clean(cmp.Or(o.Prefix, depotpath.Root))
	if err != nil || !strings.HasPrefix(cmp.Or(o.Prefix, "/"), "/") {
		return nil, fmt.Errorf("nfs: export prefix %q: want an absolute depot path such as /projects", o.Prefix)
	}
	if o.HandleTable == "" {
		return nil, errors.New("nfs: no handle table file")
	}
	grants := o.Grants
	if grants == nil {
		grants = []grant.Grant{{Tool: Tool, Prefix: prefix, Access: grant.Read}}
	}
	for _, g := range grants {
		if g.Access != grant.Read || !depotpath.Within(g.Prefix, prefix) || (g.Tool != Tool && g.Tool != grant.AnyTool) {
			return nil, fmt.Errorf("%w %s: an NFS grant reads (access r), names tool %s or *, and lies within the export prefix %s", ErrGrant, g, Tool, prefix)
		}
	}
	host := o.Host
	if host == nil {
		host, _ = policy.NewHost(nil, nil)
	}
	log := cmp.Or(o.Logger, slog.Default())
	t, err := openTable(o.HandleTable, log)
	if err != nil {
		return nil, err
	}
	recent, _ := lru.New[string, handle](recentSize)
	listings, _ := lru.New[listingKey, []os.FileInfo](listingsSize)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{st: st, opts: o, log: log, started: time.Now(), table: t, tag: exportTag(prefix),
		acc:    access{prefix: prefix, grants: grants, set: host.For(identity.Identity{Grants: grants})},
		recent: recent, listings: listings, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	s.live = &view{s: s}
	return s, nil
}

// Prefix returns the exported depot path.
func (s *Server) Prefix() string { return s.acc.prefix }

// Serve answers MOUNT and NFSv3 requests on ln (one TCP port for both)
// until Close; then it returns nil.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	srv := &nfs.Server{Handler: s, Context: s.ctx}
	err := srv.Serve(&trackedListener{Listener: ln, s: s})
	if s.ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("nfs: serve %s: %w", ln.Addr(), err)
}

// Close stops serving: listeners and connections are closed, reads in
// progress cancelled, and the handle table written and closed.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	lns, conns := s.lns, make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	for _, c := range conns {
		c.Close() // takes mu to forget itself
	}
	return s.table.close()
}

// trackedListener records the connections it accepts, so Close can end
// them (go-nfs keeps no list), and puts each behind the read-only gate
// (gatedConn).
type trackedListener struct {
	net.Listener
	s *Server
}

func (l *trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	gc := newGatedConn(c, l.s)
	l.s.conns[gc] = struct{}{}
	return gc, nil
}

// Mount answers a MOUNT request: "/" and the export prefix both name the
// export's root, and a directory below the prefix that the grants show is
// mounted as its own root (libnfs mounts the directory of the file it is
// asked for); any other path is refused with MNT3ERR_ACCES. Each answer is
// audited.
func (s *Server) Mount(ctx context.Context, c net.Conn, req nfs.MountRequest) (nfs.MountStatus, billy.Filesystem, []nfs.AuthFlavor) {
	dir := string(req.Dirpath)
	root, ok := s.mountRoot(ctx, dir)
	rec := &audit.Record{Time: time.Now().UTC(), Event: audit.EventCall, Transport: "nfs", Remote: c.RemoteAddr().String(),
		Identity: "nfs:" + c.RemoteAddr().String(), Tool: Tool + "/mount", Paths: []string{s.acc.prefix}, Decision: audit.Allow,
		Reason: "export " + s.acc.prefix + " with grants " + s.acc.set.String()}
	if !ok {
		rec.Decision, rec.Reason, rec.Paths = audit.Deny, fmt.Sprintf("mount of %q: only %s (or /) is exported", dir, s.acc.prefix), nil
	}
	if s.opts.Audit != nil {
		if err := s.opts.Audit.Append(rec); err != nil {
			// A mount that cannot be recorded is not served, as a tool
			// call that cannot be recorded is not.
			s.log.Error("nfs: mount refused: audit log failed", "remote", rec.Remote, "err", err)
			return nfs.MountStatusErrIO, nil, nil
		}
	}
	if !ok {
		return nfs.MountStatusErrAcces, nil, nil
	}
	return nfs.MountStatusOk, root, []nfs.AuthFlavor{nfs.AuthFlavorNull, nfs.AuthFlavorUnix}
}

// mountRoot returns the view a MOUNT of depot directory dir serves, and
// false when dir is not a directory the export shows.
func (s *Server) mountRoot(ctx context.Context, dir string) (*view, bool) {
	if dir == "" || dir == "/" {
		return s.live, true
	}
	clean, err := depotpath.Clean(dir)
	if err != nil || !strings.HasPrefix(dir, "/") || !depotpath.Within(clean, s.acc.prefix) {
		return nil, false
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(clean, s.acc.prefix), "/")
	if rel == "" {
		return s.live, true
	}
	l, err := s.resolve(ctx, rel)
	if err != nil {
		return nil, false
	}
	if e, _, err := s.stat(ctx, l); err != nil || !e.IsDir() {
		return nil, false
	}
	return &view{s: s, base: rel}, true
}

// Change returns nil: the export is read-only.
func (s *Server) Change(billy.Filesystem) billy.Change { return nil }

// FSStat reports the depot's counts; free space is none (nothing can be
// written).
func (s *Server) FSStat(ctx context.Context, _ billy.Filesystem, out *nfs.FSStat) error {
	st, err := s.st.Stats(ctx)
	if err != nil {
		return err
	}
	out.TotalSize = uint64(max(st.LogicalBytes, 0))
	out.TotalFiles = uint64(max(st.Files+st.Placeholders+st.Dirs, 0))
	return nil
}

// HandleLimit bounds the entries of one READDIRPLUS reply (go-nfs takes
// half of it); handles themselves are not limited: none is kept in memory
// that a restart or eviction could lose.
func (s *Server) HandleLimit() int { return handleLimit }

// InvalidateHandle does nothing: a handle stays valid for as long as its
// entry exists.
func (s *Server) InvalidateHandle(billy.Filesystem, []byte) error { return nil }

// remember notes the handle of export path p, found while listing or
// looking it up, so ToHandle need not stat it again.
func (s *Server) remember(p string, l loc, ino uint64) {
	s.recent.Add(p, handle{kind: l.kind, tag: s.tag, ino: ino, gen: l.gen()})
}

// ToHandle returns the handle of export path path, and records its key in
// the handle table. A path that cannot be resolved gets a handle that
// answers NFS3ERR_STALE.
func (s *Server) ToHandle(fs billy.Filesystem, path []string) []byte {
	p := s.live.Join(path...)
	if v, ok := fs.(*view); ok {
		p = v.full(p)
	}
	h, ok := s.recent.Get(p)
	if !ok {
		l, err := s.resolve(s.ctx, p)
		if err == nil {
			var ino uint64
			if _, ino, err = s.stat(s.ctx, l); err == nil {
				h = handle{kind: l.kind, tag: s.tag, ino: ino, gen: l.gen()}
			}
		}
		if err != nil {
			h = handle{kind: kindLive, tag: s.tag}
		}
	}
	h.key = pathKey(s.tag, p)
	s.table.put(h.key, p)
	return h.encode()
}

// FromHandle resolves a handle to the filesystem and path go-nfs reads.
// A handle whose path now holds another entry (another inode number, or a
// snapshot taken again under its name) is stale, except the handle of a
// file version that was replaced: it reads that version while the store
// keeps it. The export root's handle is always the export root.
func (s *Server) FromHandle(fh []byte) (billy.Filesystem, []string, error) {
	h, err := decodeHandle(fh, s.tag)
	if err != nil {
		return nil, nil, err
	}
	p, ok := s.table.get(h.key)
	if !ok {
		return nil, nil, ErrStale
	}
	if p == "" {
		return s.live, nil, nil
	}
	path := strings.Split(p, "/")
	l, err := s.resolve(s.ctx, p)
	if err != nil || l.kind != h.kind {
		return nil, nil, fmt.Errorf("%w: %s", ErrStale, p)
	}
	_, ino, err := s.stat(s.ctx, l)
	if err == nil && ino == h.ino && l.gen() == h.gen {
		return s.live, path, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotExist) {
		return nil, nil, err
	}
	if rev, ok := inode.Revision(h.ino); ok && l.kind == kindLive && h.gen == 0 {
		e, err := s.st.StatAt(s.ctx, l.depot, rev)
		if err == nil && !e.IsDir() && e.Revision == rev {
			return &view{s: s, rev: rev}, path, nil
		}
	}
	return nil, nil, fmt.Errorf("%w: %s", ErrStale, p)
}

// VerifierFor names one listing of a directory, so the pages of a large
// READDIRPLUS are cut from the same listing (kept in a small LRU) instead
// of listing the directory again for every page.
func (s *Server) VerifierFor(path string, contents []iofs.FileInfo) uint64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	for _, fi := range contents {
		h.Write([]byte(fi.Name()))
		if i, ok := fi.(*info); ok {
			fmt.Fprintf(h, "\x00%d\x00%d", i.ino, i.e.Revision)
		}
	}
	v := h.Sum64() | 1 // 0 means "no verifier" to go-nfs
	s.listings.Add(listingKey{path, v}, contents)
	return v
}

// DataForVerifier returns the listing VerifierFor named, or nil once it
// has left the cache (the client then starts the listing again).
func (s *Server) DataForVerifier(path string, verifier uint64) []iofs.FileInfo {
	l, _ := s.listings.Get(listingKey{path, verifier})
	return l
}

// inodeOf is the live inode number of e (package inode).
func inodeOf(e store.Entry) uint64 { return inode.Of(e) }

// snapIno is the inode number of e in snapshot sn.
func snapIno(sn store.Snapshot, e store.Entry) uint64 { return inode.InSnapshot(snapID(sn), e) }
