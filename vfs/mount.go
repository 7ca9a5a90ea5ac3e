package vfs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs/internal/blobcache"
)

// ErrUnmounted reports a wait on a mount that has been unmounted.
var ErrUnmounted = errors.New("vfs: not mounted")

// maxRead is the largest READ request (MaxWrite), and the readahead window
// asked for: bigger requests mean fewer round trips per byte.
const maxRead = 1 << 20

// Server is a store mounted as a read-only FUSE filesystem, as returned by
// Mount. (Go does not allow a type and a function both named Mount.) Its
// methods are safe for concurrent use.
type Server struct {
	opens  *opens // files open in the mount (countedFS)
	dir    string
	server *fuse.Server
	log    *slog.Logger
	inv    *invalidator
	blobs  *blobs // the blob cache, closed at Unmount; nil without passthrough

	stopWatch    context.CancelFunc
	watchDone    chan struct{} // closed when the invalidation goroutine exits
	prefetchDone chan struct{} // closed when the prefetcher exits; nil without passthrough
	served       chan struct{} // closed when the FUSE server has exited

	unmountOnce sync.Once
	unmountErr  error
}

// Mount mounts st read-only at dir and starts serving it and applying its
// change events as kernel cache invalidations. ctx bounds the setup only;
// the mount lives until Unmount (or an external umount).
//
// dir is created (0755) if missing. A dead FUSE mount at dir, left by a
// process that crashed without unmounting, is detached first (and logged);
// a live mount of anything at dir is an error wrapping ErrMounted, rather
// than a second mount stacked on it, and a directory with entries one
// wrapping ErrNotEmpty unless Options.AllowNonEmpty. A nil opts means the
// defaults.
func Mount(ctx context.Context, dir string, st store.Store, opts *Options) (*Server, error) {
	o := opts.withDefaults()
	dir, err := prepareMountpoint(dir, o.AllowNonEmpty, o.Logger)
	if err != nil {
		return nil, fmt.Errorf("vfs: %w", err)
	}
	rev, err := st.Revision(ctx)
	if err != nil {
		return nil, fmt.Errorf("vfs: mount %s: store revision: %w", dir, err)
	}
	// Subscribe before mounting, so that no change between this revision
	// and the first request goes unnoticed.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	events, err := st.Watch(watchCtx, depotpath.Root, rev)
	if err != nil {
		stopWatch()
		return nil, fmt.Errorf("vfs: mount %s: watch store: %w", dir, err)
	}

	var pt *blobs
	if o.Passthrough {
		if pt, err = openBlobs(o); err != nil {
			stopWatch()
			return nil, fmt.Errorf("vfs: mount %s: %w", dir, err)
		}
	}
	fsys := &fsys{st: st, opts: o, log: o.Logger, started: time.Now()}
	if c, ok := st.(catcherUp); ok && o.Shared {
		fsys.syncHosts = c.CatchUp
	}
	root := &dirNode{node: node{fsys: fsys}, path: depotpath.Root}
	opens := new(opens)
	raw := &countedFS{RawFileSystem: fs.NewNodeFS(root, nodeOptions(o)), opens: opens}
	server, err := fuse.NewServer(observe(raw, o.Observer), dir, mountOptions(o))
	if err != nil {
		stopWatch()
		if pt != nil {
			pt.cache.Close()
		}
		return nil, fmt.Errorf("vfs: mount %s: %w", dir, err)
	}
	m := &Server{
		opens:     opens,
		dir:       dir,
		server:    server,
		log:       o.Logger,
		inv:       newInvalidator(fsys, root.EmbeddedInode(), rev),
		stopWatch: stopWatch,
		blobs:     pt,
		watchDone: make(chan struct{}),
		served:    make(chan struct{}),
	}
	go m.serve()
	go func() {
		defer close(m.watchDone)
		m.inv.run(watchCtx, events)
	}()
	if err := server.WaitMount(); err != nil {
		return nil, errors.Join(fmt.Errorf("vfs: mount %s: %w", dir, err), m.Unmount())
	}
	if pt != nil {
		if server.KernelSettings().Flags64()&fuse.CAP_PASSTHROUGH == 0 {
			o.Logger.Info("vfs: passthrough off: the kernel does not offer FUSE passthrough")
		} else {
			fsys.pt.Store(pt)
			m.prefetchDone = make(chan struct{})
			go func() {
				defer close(m.prefetchDone)
				pt.retain(watchCtx, st)
				pt.runPrefetch(watchCtx, st)
			}()
		}
	}
	raiseReadahead(dir, maxRead>>10, o.Logger)
	return m, nil
}

// serve runs the FUSE server until the filesystem is unmounted, by Unmount
// or from outside; then it stops the invalidation goroutine too.
func (m *Server) serve() {
	m.server.Serve()
	m.stopWatch()
	close(m.served)
}

// Passthrough reports whether files are served through FUSE passthrough
// (see Options.Passthrough).
func (m *Server) Passthrough() bool { return m.inv.fsys.pt.Load() != nil }

// openBlobs opens the blob cache for passthrough, or returns nil (and logs
// why) when passthrough cannot work: it needs root.
func openBlobs(o Options) (*blobs, error) {
	if os.Geteuid() != 0 {
		o.Logger.Info("vfs: passthrough off: it needs root")
		return nil, nil
	}
	if o.BlobCacheDir == "" || o.BlobCacheBytes <= 0 {
		return nil, fmt.Errorf("passthrough needs a blob cache directory and size (got %q, %d bytes)", o.BlobCacheDir, o.BlobCacheBytes)
	}
	c, err := blobcache.Open(o.BlobCacheDir, o.BlobCacheBytes, o.Logger)
	if err != nil {
		return nil, err
	}
	return newBlobs(c, o.Logger), nil
}

// Dir returns the absolute path the store is mounted at.
func (m *Server) Dir() string { return m.dir }

// Wait blocks until the filesystem is unmounted, by Unmount or from outside
// (umount), and its server has exited.
func (m *Server) Wait() { <-m.served }

// WaitApplied returns once every store event with a revision up to rev,
// and every change committed before the call, has been turned into kernel
// invalidations: a reader that starts afterwards sees that revision or a
// later one. Waiting for what was committed before the call too covers the
// other changes of rev's transaction (the files a write evicted get
// revisions after the write's own). It returns early with ctx's error,
// with ErrUnmounted once the mount is gone, or with an error wrapping
// store.ErrClosed if the store stopped its event stream. rev should be the
// revision of a committed change (store.Entry.Revision after a write).
//
// Snapshots have no events: WaitApplied also makes the kernel forget every
// snapshot name it knows that the store no longer has, so a snapshot
// deleted before the call is gone from the mount when it returns.
func (m *Server) WaitApplied(ctx context.Context, rev uint64) error {
	cur, err := m.inv.fsys.st.Revision(ctx)
	if err != nil {
		return fmt.Errorf("vfs: waiting for revision %d: %w", rev, err)
	}
	if err := m.inv.wait(ctx, max(rev, cur)); err != nil {
		return err
	}
	return m.inv.fsys.forgetSnapshots(ctx, m.inv.root)
}

// Unmount stops applying store events, unmounts the filesystem and waits
// for its server to exit. If files are still open in the mount, the
// connection is aborted (their readers get ENOTCONN) and the mount detached,
// so Unmount never leaves a mount behind nor waits for other processes.
// Unmount is idempotent; later calls return the first call's result.
func (m *Server) Unmount() error {
	m.unmountOnce.Do(func() {
		m.stopWatch()
		<-m.watchDone
		if m.prefetchDone != nil {
			<-m.prefetchDone
		}
		m.unmountErr = m.unmount()
		if m.blobs != nil {
			m.blobs.cache.Close() // seals what was filled last
		}
	})
	return m.unmountErr
}

func (m *Server) unmount() error {
	select {
	case <-m.served:
		return nil // unmounted from outside already
	default:
	}
	err := syscall.Unmount(m.dir, 0)
	if err != nil {
		m.log.Warn("vfs: unmount failed; aborting the connection and detaching the mount", "dir", m.dir, "err", err)
		// MNT_FORCE makes FUSE abort the connection, which ends the
		// server; MNT_DETACH removes the mount even while files are open.
		if ferr := syscall.Unmount(m.dir, syscall.MNT_FORCE|syscall.MNT_DETACH); ferr != nil {
			return fmt.Errorf("vfs: unmount %s: %w (forced: %w)", m.dir, err, ferr)
		}
	}
	<-m.served
	return nil
}

// mountOptions are the kernel mount options: read-only, no set-uid or
// device files, no exec unless asked, permissions enforced by the kernel
// from the modes shown.
func mountOptions(o Options) *fuse.MountOptions {
	flags := uintptr(syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV)
	opts := []string{"ro", "nosuid", "nodev", "default_permissions"}
	if !o.Exec {
		flags |= syscall.MS_NOEXEC
		opts = append(opts, "noexec")
	}
	// go-fuse logs through this its request trace (--debug-fuse) and,
	// unasked, a line for every read whose splice fell back to a copy:
	// noise at INFO, so only the asked-for trace is logged there.
	level := slog.LevelDebug
	if o.Debug {
		level = slog.LevelInfo
	}
	return &fuse.MountOptions{
		AllowOther:       o.AllowOther,
		Options:          opts,
		DirectMount:      true,
		DirectMountFlags: flags,
		FsName:           o.FsName,
		Name:             "depotfs",
		MaxWrite:         maxRead,
		// READDIRPLUS only where it pays: the kernel asks for names
		// with attributes on a directory's first READDIR and when the
		// names it listed are being looked up (ls -l), plain names
		// otherwise (find).
		ExtraCapabilities: fuse.CAP_READDIRPLUS_AUTO |
			// Lets programs map a file served with direct I/O (one
			// that may not enter the page cache, see fileNode.serve)
			// with MAP_SHARED; Linux 6.6 and later, else mmap fails
			// with ENODEV.
			fuse.CAP_DIRECT_IO_ALLOW_MMAP |
			// Lets the kernel revive a file handle whose inode it no
			// longer has (open_by_handle_at, the kernel's NFS server
			// re-exporting the mount, after a restart): it asks the
			// node ID, depotfs's inode number, of the root (see
			// dirNode.LookupNode).
			fuse.CAP_EXPORT_SUPPORT,
		MaxReadAhead: maxRead,
		// Not IgnoreSecurityLabels: it answers ENODATA for ACLs, where
		// Getxattr's EOPNOTSUPP lets ls stop asking.
		DisableXAttrs: o.NoXattrs,
		Debug:         o.Debug,
		Logger:        slog.NewLogLogger(o.Logger.Handler(), level),
	}
}

// nodeOptions configure go-fuse's node layer. The timeouts are not nil
// (but with Options.Shared, the entry and negative ones): nil means 0 s, a
// round trip per path component on every access.
func nodeOptions(o Options) *fs.Options {
	no := &fs.Options{
		MountOptions:    *mountOptions(o),
		EntryTimeout:    &o.EntryTimeout,
		AttrTimeout:     &o.AttrTimeout,
		NegativeTimeout: &o.NegativeTimeout,
		NullPermissions: true, // a mode of 0 (umask 0777) means 0, not 0644
		RootStableAttr:  &fs.StableAttr{Ino: store.RootIno},
		// The kernel's node IDs are depotfs's own inode numbers (package
		// inode), which never change meaning: a file handle the kernel
		// gives out (name_to_handle_at, or the kernel NFS server or Samba
		// re-exporting the mount) names the same entry for as long as
		// the store has it (see DESIGN.md, "Doors without FUSE").
		ExternalNodeID: true,
		Logger:         slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}
	if o.Shared {
		// A lookup that finds nothing then answers ENOENT, which the
		// kernel does not cache: it asks again next time. A live name
		// found is not cached either: another host may remove or move
		// it before this kernel is told, and a path walk must then fail
		// (the lookup catches up first, see fsys.catchUp). A snapshot's
		// names set their own timeouts: nothing below them changes.
		no.NegativeTimeout = nil
		no.EntryTimeout = nil
	}
	return no
}

// raiseReadahead sets the mount's readahead window to kb KiB. The FUSE INIT
// reply cannot raise it above the kernel's 128 KiB default; the bdi sysfs
// knob can (root only). Failure is harmless, so it is only logged at debug.
func raiseReadahead(dir string, kb int, log *slog.Logger) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		log.Debug("vfs: readahead not raised", "dir", dir, "err", err)
		return
	}
	knob := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev))
	if err := os.WriteFile(knob, []byte(fmt.Sprint(kb)), 0); err != nil {
		log.Debug("vfs: readahead not raised", "dir", dir, "err", err)
	}
}
