package vfs

import (
	"cmp"
	"context"
	iofs "io/fs"
	"log/slog"
	"time"

	"github.com/depotfs/depotfs/store"
)

// Default permission bits, before the entry's own mode and the umask.
const (
	DefaultFileMode iofs.FileMode = 0o444
	DefaultDirMode  iofs.FileMode = 0o555
)

// DefaultTimeout is how long the kernel may cache names (found and
// missing), attributes and listings when Options leaves the timeouts zero.
// It is effectively forever: depotfs sees every change to the store and
// invalidates exactly what changed before the change is acknowledged
// (Server.WaitApplied), so a timer would only make the kernel ask again for
// what cannot have changed (see DESIGN.md, "The mount").
const DefaultTimeout = 24 * time.Hour

// Options configure a mount. The zero value (or a nil *Options) works: root
// owns everything, files are 0444 and directories 0555, provenance xattrs are
// on, programs are not executable from the mount, and only the mounting user
// may look inside.
type Options struct {
	// UID and GID own every entry (0 = root).
	UID, GID uint32

	// Umask clears permission bits from every mode shown. An entry's mode is
	// its store.Entry.Mode (DefaultFileMode or DefaultDirMode when 0) with the
	// write bits cleared, then with Umask cleared.
	Umask iofs.FileMode

	// AllowOther lets users other than the mounting one use the mount
	// (allow_other); the kernel then enforces the modes shown
	// (default_permissions is always on).
	AllowOther bool

	// Exec allows running programs from the mount (omits noexec).
	Exec bool

	// AllowNonEmpty mounts over a directory that has entries, hiding them
	// while mounted. Otherwise Mount refuses it with ErrNotEmpty: a wrong
	// --mount would silently hide what was there.
	AllowNonEmpty bool

	// NoXattrs turns off the user.depotfs.* provenance extended attributes;
	// the kernel then stops asking for any. Leaving them on costs `ls -l`
	// nothing measurable: attributes outside user.* answer EOPNOTSUPP,
	// which ls remembers for the whole filesystem.
	NoXattrs bool

	// Shared says other hosts change the store too (a NATS depot). Their
	// changes reach this mount's kernel only after their writers have
	// answered, so for close-to-open reads the mount does not rely on what
	// the kernel remembers: a name, found or missing, is not cached, and a
	// lookup first catches up with the other hosts when the store can
	// (store/nats's CatchUp), so a name another host removed or moved away
	// before a stat began is gone and one it created is there; an open
	// reads the store's newest version, never the older one the kernel
	// resolved the name to (see fileNode.openOld). A change
	// made through this host is told to the kernel before its writer
	// answers, so without Shared both are cached.
	Shared bool

	// EntryTimeout, AttrTimeout and NegativeTimeout are how long the
	// kernel may cache a name, an inode's attributes and a name's absence
	// (with Shared, live names and missing ones not at all); 0 means
	// DefaultTimeout. Invalidation does
	// not depend on them.
	EntryTimeout, AttrTimeout, NegativeTimeout time.Duration

	// Logger receives one line per unexpected error (and placeholder read);
	// nil means slog.Default().
	Logger *slog.Logger

	// Debug logs every FUSE request and reply at Info level on Logger.
	Debug bool

	// Observer, when set, hears how long each FUSE request took (depotfs
	// feeds its metrics); nil observes nothing and costs nothing.
	Observer OpObserver

	// FsName is the source shown in /proc/mounts and df; "" means "depotfs".
	FsName string

	// Passthrough serves files of at least PassthroughMinSize through FUSE
	// passthrough: each is copied once into a blob file under BlobCacheDir
	// (at most BlobCacheBytes in all, least recently used deleted first) and
	// the kernel reads that file directly, at the speed of a local file.
	// It needs root and a kernel with FUSE passthrough (6.9 or later);
	// without them the mount works as if it were off (Server.Passthrough
	// says which). At mount, the blobs an earlier mount left in
	// BlobCacheDir are kept if their files are unchanged since written
	// (size, inode and change time, recorded once synced) and the store
	// still holds their content; the others are deleted. The store is
	// the store of record.
	Passthrough    bool
	BlobCacheDir   string
	BlobCacheBytes int64

	// Fetcher, when set, is asked for the content of a file the store
	// holds only as a placeholder (listed but not pushed, stale, or
	// evicted): an open of such a file blocks in Fetch instead of failing
	// at once with EIO. nil: such opens fail with EIO.
	Fetcher Fetcher
}

// Fetcher obtains the content of a file whose entry the store holds without
// content. depotfs wires it to the fetch broker (package store/fetch),
// which asks agents for the file. Fetch is called from many FUSE request
// goroutines at once and must be safe for that.
type Fetcher interface {
	// Fetch returns the content of the file at the clean depot path p, as
	// store.Store.Open would, but waits for the content of a placeholder
	// to arrive instead of failing with store.ErrNotPresent. It returns early with an error wrapping
	// ctx's error when the reader is interrupted (the kernel cancels the
	// FUSE request when the reading process gets a signal, or is killed);
	// an error wrapping store.ErrNotPresent when the content did not arrive
	// in time; and the store's errors otherwise.
	Fetch(ctx context.Context, p string) (store.Content, error)
	// Want asks for the content of the placeholder at p as Fetch would,
	// without waiting for it: an open with O_NONBLOCK fails at once with
	// EAGAIN, but the agents are asked all the same.
	Want(ctx context.Context, p string) error
}

// withDefaults returns a copy of o with every zero field that has a default
// filled in.
func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	for _, t := range []*time.Duration{&r.EntryTimeout, &r.AttrTimeout, &r.NegativeTimeout} {
		if *t <= 0 {
			*t = DefaultTimeout
		}
	}
	r.Logger = cmp.Or(r.Logger, slog.Default())
	r.FsName = cmp.Or(r.FsName, "depotfs")
	return r
}

// perm returns the permission bits shown for an entry.
func (o *Options) perm(e store.Entry) uint32 {
	p := e.Mode.Perm()
	if p == 0 {
		p = DefaultFileMode
		if e.IsDir() {
			p = DefaultDirMode
		}
	}
	return uint32(p &^ 0o222 &^ o.Umask.Perm())
}
