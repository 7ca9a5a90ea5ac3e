// Package pending is the list of files programs on the host are waiting
// for, as one caller may see it: what guide_pending_requests replies and
// the depotfs://pending-requests resource holds. It reads the fetch
// broker, filters its requests by what the caller may write, and encodes
// cursors that tell one run of depotfs from another.
package pending

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/store/fetch"
)

// URI is the resource that lists the pending requests; subscribers get
// notifications/resources/updated when the list changes.
const URI = "depotfs://pending-requests"

// MaxWaitSeconds bounds wait_seconds: long enough to save most round trips,
// short enough for every HTTP client's timeout.
const MaxWaitSeconds = 60

// Requests is the fetch broker as the MCP server sees it (package
// store/fetch's *Broker implements it). Its methods must be safe for
// concurrent use.
type Requests interface {
	// Pending returns the pending requests with a channel closed at the
	// next change.
	Pending() fetch.Snapshot
	// Notify registers fn to be called after every change to the pending
	// requests, until stop is called; fn must not block.
	Notify(fn func()) (stop func())
	// Stats returns the broker's counters.
	Stats() fetch.Stats
	// Timeout is how long a reader waits before it gets an I/O error.
	Timeout() time.Duration
}

// Request is one pending request in a reply.
type Request struct {
	ID             uint64  `json:"id"`
	Path           string  `json:"path"`
	MountPath      string  `json:"mount_path,omitempty"`
	Size           int64   `json:"size"`
	MTime          string  `json:"mtime,omitempty"`
	SHA256         string  `json:"sha256,omitempty"`
	Since          string  `json:"since"`
	WaitingSeconds float64 `json:"waiting_seconds"`
	Waiters        int     `json:"waiters"`
}

// Data is the reply data of guide_pending_requests and the content of the
// pending-requests resource.
type Data struct {
	Requests            []Request `json:"requests"`
	Count               int       `json:"count"`
	New                 int       `json:"new"`
	Cursor              string    `json:"cursor"`
	FetchTimeoutSeconds float64   `json:"fetch_timeout_seconds"`
}

// List is the broker's pending requests as the server shows them. It is
// safe for concurrent use.
type List struct {
	requests  Requests // nil: nothing is ever requested
	epoch     string   // tells this server's cursors from another run's
	done      context.Context
	mountPath func(string) string
}

// New returns the list of r's requests (r may be nil). Long polls end when
// done does; mountPath shows where a depot path appears on the host.
func New(r Requests, done context.Context, mountPath func(string) string) *List {
	return &List{requests: r, epoch: strconv.FormatInt(time.Now().UnixNano(), 36), done: done, mountPath: mountPath}
}

// Closing returns the context that ends when the server closes: every
// long poll (this list's, and guide_changes's) returns then, so a
// shutdown does not wait out a poll.
func (l *List) Closing() context.Context { return l.done }

// Broker returns the fetch broker, nil without one.
func (l *List) Broker() Requests { return l.requests }

// Wait returns the requests the caller may see (those mayWrite allows)
// once one of them is newer than after, or when wait has passed, the
// caller has gone (ctx), or the server is closing.
func (l *List) Wait(ctx context.Context, mayWrite func(string) bool, after uint64, wait time.Duration) *Data {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		snap := l.snapshot()
		data := l.data(mayWrite, snap, after)
		if data.New > 0 || wait == 0 {
			return data
		}
		select {
		case <-snap.Changed:
		case <-timer.C:
			return l.data(mayWrite, l.snapshot(), after)
		case <-ctx.Done():
			return data
		case <-l.done.Done():
			return data
		}
	}
}

// Current returns the requests the caller may see now, all counted as new.
func (l *List) Current(mayWrite func(string) bool) *Data {
	return l.data(mayWrite, l.snapshot(), 0)
}

// snapshot returns the broker's pending requests, or an empty snapshot
// that never changes when there is no broker.
func (l *List) snapshot() fetch.Snapshot {
	if l.requests == nil {
		return fetch.Snapshot{}
	}
	return l.requests.Pending()
}

// data describes the requests of snap the caller may see, counting those
// with an ID greater than after as new.
func (l *List) data(mayWrite func(string) bool, snap fetch.Snapshot, after uint64) *Data {
	now := time.Now()
	// The cursor carries this run's epoch, so one kept across a restart
	// of depotfs (whose IDs start again at 1) is recognized as foreign
	// instead of hiding the new run's requests.
	d := &Data{Requests: []Request{}, Cursor: l.epoch + "-" + strconv.FormatUint(snap.LastID, 10)}
	if l.requests != nil {
		d.FetchTimeoutSeconds = l.requests.Timeout().Seconds()
	}
	for _, r := range snap.Requests {
		if !mayWrite(r.Path) {
			continue
		}
		rd := Request{
			ID: r.ID, Path: r.Path, MountPath: l.mountPath(r.Path),
			Size: r.Size, SHA256: r.SHA256,
			Since:          r.Since.UTC().Format(time.RFC3339Nano),
			WaitingSeconds: math.Round(now.Sub(r.Since).Seconds()*10) / 10,
			Waiters:        r.Waiters,
		}
		if !r.MTime.IsZero() {
			rd.MTime = r.MTime.UTC().Format(time.RFC3339Nano)
		}
		d.Requests = append(d.Requests, rd)
		if r.ID > after {
			d.New++
		}
	}
	d.Count = len(d.Requests)
	return d
}

// errCursor is the problem of a cursor that is not one this list returned.
var errCursor = fmt.Errorf("%w: not a cursor returned by guide_pending_requests; omit it to list every request", args.ErrInvalid)

// ParseCursor decodes a cursor: the request ID it stands for, or foreign
// true (and ID 0) when it comes from another run of depotfs.
func (l *List) ParseCursor(cur string) (after uint64, foreign bool, err error) {
	epoch, id, ok := strings.Cut(cur, "-")
	_, epochErr := strconv.ParseUint(epoch, 36, 64)
	n, err := strconv.ParseUint(id, 10, 64)
	if !ok || len(cur) > 64 || epochErr != nil || err != nil {
		return 0, false, errCursor
	}
	if epoch != l.epoch {
		return 0, true, nil
	}
	return n, false, nil
}
