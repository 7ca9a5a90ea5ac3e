package vfs

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// OpObserver hears how long each FUSE request took to answer, by
// operation ("lookup", "getattr", "open", "read", "readdir", ...). It is
// called from every FUSE request goroutine at once, on the request's path:
// it must be safe for concurrent use and must not block (depotfs feeds
// Prometheus counters and histograms).
type OpObserver interface {
	ObserveOp(op string, d time.Duration)
}

// observedFS times the operations a read-only mount serves and reports
// them to an OpObserver; every other operation passes through untimed.
type observedFS struct {
	fuse.RawFileSystem
	obs OpObserver
}

func observe(raw fuse.RawFileSystem, obs OpObserver) fuse.RawFileSystem {
	if obs == nil {
		return raw
	}
	return &observedFS{RawFileSystem: raw, obs: obs}
}

func (o *observedFS) done(op string, start time.Time) { o.obs.ObserveOp(op, time.Since(start)) }

func (o *observedFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	defer o.done("lookup", time.Now())
	return o.RawFileSystem.Lookup(cancel, h, name, out)
}

func (o *observedFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer o.done("getattr", time.Now())
	return o.RawFileSystem.GetAttr(cancel, in, out)
}

func (o *observedFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer o.done("open", time.Now())
	return o.RawFileSystem.Open(cancel, in, out)
}

func (o *observedFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	defer o.done("read", time.Now())
	return o.RawFileSystem.Read(cancel, in, buf)
}

func (o *observedFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	defer o.done("release", time.Now())
	o.RawFileSystem.Release(cancel, in)
}

func (o *observedFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer o.done("opendir", time.Now())
	return o.RawFileSystem.OpenDir(cancel, in, out)
}

func (o *observedFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer o.done("readdir", time.Now())
	return o.RawFileSystem.ReadDir(cancel, in, out)
}

func (o *observedFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer o.done("readdirplus", time.Now())
	return o.RawFileSystem.ReadDirPlus(cancel, in, out)
}

func (o *observedFS) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	defer o.done("getxattr", time.Now())
	return o.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (o *observedFS) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	defer o.done("listxattr", time.Now())
	return o.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (o *observedFS) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	defer o.done("statfs", time.Now())
	return o.RawFileSystem.StatFs(cancel, h, out)
}

func (o *observedFS) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	defer o.done("access", time.Now())
	return o.RawFileSystem.Access(cancel, in)
}
