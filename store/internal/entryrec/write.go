package entryrec

import (
	"io/fs"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// RootEntry is the entry of "/", which has no record; its times are the
// store's to fill in.
func RootEntry() store.Entry {
	return store.Entry{Path: depotpath.Root, Kind: store.KindDir, Ino: store.RootIno, Explicit: true}
}

// Put returns the record a whole-file write (req, of content sum, size
// bytes) makes of the file r (nil: absent), the write's status and its
// event. Unless the status is store.StatusUnchanged the caller references
// sum and, for store.StatusUpdated, drops r's content. A new file's Ino
// is 0 (the store assigns one); Updated is the caller's to set when it
// writes the record.
func Put(r *Record, req store.PutRequest, sum string, size int64, now time.Time) (Record, store.PutStatus, store.EventKind) {
	var next Record
	var status store.PutStatus
	kind := store.EventUpdated
	switch {
	case r == nil:
		status, kind = store.StatusCreated, store.EventCreated
		next = Record{Kind: store.KindFile, Created: now}
	case !r.Present:
		status, next = store.StatusCreated, *r
	case r.SHA256 == sum:
		status, next = store.StatusUnchanged, *r
	default:
		status, next = store.StatusUpdated, *r
		next.Updates++
	}
	if status != store.StatusUnchanged {
		next.Size, next.SHA256, next.Present, next.Declared = size, sum, true, ""
		next.MTime = now
	}
	if !req.MTime.IsZero() {
		next.MTime = UTC(req.MTime)
	}
	next.Mode = req.Mode & fs.ModePerm
	next.Encoding, next.Source, next.Writer = req.Encoding, req.Source, req.Writer
	next.Expires, next.Pinned = UTC(req.Expires), req.Pinned
	return next, status, kind
}

// Declare returns the record declaration d (made by writer, from source)
// makes of the entry r (nil: absent, else of d's kind), whether it makes r
// stale, and whether it changes anything. A new file is a placeholder
// with the declared hash (Declared). A present file whose declared size,
// mtime or hash differs is stale: it becomes a placeholder with the
// declared size, mtime and hash, and the caller drops its content; a
// placeholder takes a differing declared size, mtime or hash, also stale
// (a hash not declared then is unknown). A directory becomes explicit;
// mode 0 keeps the stored mode. A new entry's Ino is 0 (the store assigns
// one).
func Declare(r *Record, d store.Declaration, writer, source string, now time.Time) (next Record, stale, changed bool) {
	mode := d.Mode & fs.ModePerm
	if r == nil {
		next = Record{Kind: d.Kind, Mode: mode, MTime: now, Created: now, Updated: now, Writer: writer, Source: source}
		if !d.MTime.IsZero() {
			next.MTime = UTC(d.MTime)
		}
		if d.Kind == store.KindDir {
			next.Explicit = true
		} else {
			next.Size, next.Declared = max(d.Size, 0), d.SHA256
		}
		return next, false, true
	}
	next = *r
	if mode != 0 {
		next.Mode = mode
	}
	if d.Kind == store.KindDir {
		next.Explicit = true
	} else {
		sizeDiffers := d.Size != -1 && d.Size != r.Size
		mtimeDiffers := !d.MTime.IsZero() && !d.MTime.Equal(r.MTime)
		hashDiffers := d.SHA256 != "" && (r.Present && d.SHA256 != r.SHA256 || !r.Present && d.SHA256 != r.Declared)
		stale = sizeDiffers || mtimeDiffers || hashDiffers
		if stale {
			next.Present, next.SHA256, next.Declared = false, "", d.SHA256
			if d.Size != -1 {
				next.Size = d.Size
			}
			if !d.MTime.IsZero() {
				next.MTime = UTC(d.MTime)
			}
		}
	}
	if SameMeta(r, &next) {
		return next, stale, false
	}
	next.Updated, next.Writer, next.Source = now, writer, source
	return next, stale, true
}
