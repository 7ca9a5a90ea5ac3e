package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/store/fetch"
)

const toolPendingRequests = "guide_pending_requests"

// pendingURI is the resource that lists the pending requests; subscribers
// get notifications/resources/updated when the list changes.
const pendingURI = "depotfs://pending-requests"

// maxWaitSeconds bounds wait_seconds: long enough to save most round trips,
// short enough for every HTTP client's timeout.
const maxWaitSeconds = 60

func (s *Server) pendingRequestsTool() tool {
	return tool{
		spec:    s.toolSpec(toolPendingRequests, "List the files programs are waiting for", readOnly),
		profile: ProfileGuide,
		shape:   envelopeShape{},
		run:     s.pendingRequests,
	}
}

// requestData is one pending request in a reply.
type requestData struct {
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

// requestsData is the reply data of guide_pending_requests and the content
// of the pending-requests resource.
type requestsData struct {
	Requests            []requestData `json:"requests"`
	Count               int           `json:"count"`
	New                 int           `json:"new"`
	Cursor              string        `json:"cursor"`
	FetchTimeoutSeconds float64       `json:"fetch_timeout_seconds"`
}

// pendingArgs are the arguments of guide_pending_requests.
type pendingArgs struct {
	wait    time.Duration
	after   uint64 // only requests with a greater ID count as new
	foreign bool   // the cursor came from another run of depotfs
}

// pendingRequests lists the pending requests, waiting up to wait_seconds
// for a new one when there is none.
func (s *Server) pendingRequests(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	var probs problems
	var a pendingArgs
	if o := decodeObject(raw, "arguments", "", &probs); o != nil {
		if o.has("wait_seconds") {
			if n, ok := o.integer("wait_seconds", false, 0, maxWaitSeconds); ok {
				a.wait = time.Duration(n) * time.Second
			}
		}
		if o.has("cursor") {
			if cur, ok := o.str("cursor", false); ok {
				after, foreign, err := s.parseCursor(cur)
				if err != nil {
					probs.add("cursor", err)
				}
				a.after, a.foreign = after, foreign
			}
		}
		o.finish()
	}
	if err := probs.err(); err != nil {
		return reply{}, err
	}

	start := time.Now()
	data := s.waitRequests(ctx, a)
	waited := time.Since(start)
	c.status = strconv.Itoa(data.Count)
	c.attrs = append(c.attrs, slog.Int("new", data.New), slog.Duration("waited", waited))

	var warnings []string
	if a.foreign {
		warnings = append(warnings, "The cursor comes from an earlier run of depotfs, so every pending request counts as new; use the cursor of this reply from now on.")
	}
	if s.opts.Requests == nil {
		warnings = append(warnings, "depotfs is not mounted here, so no program can ask for a file: the list is always empty.")
	}
	var msg string
	if data.Count == 0 {
		msg = fmt.Sprintf("No program is waiting for a file (waited %.0f s). Call again with the cursor and wait_seconds to wait for the next request.", waited.Seconds())
	} else {
		msg = fmt.Sprintf("%d file(s) are wanted by programs on the host (%d new since the cursor): send each one's content with guide_cache_file or guide_read_file at its path; a program waits at most %.0f s before it gets an I/O error.",
			data.Count, data.New, data.FetchTimeoutSeconds)
	}
	return reply{
		data:     data,
		message:  msg,
		warnings: warnings,
		stats: map[string]any{
			"pending":   data.Count,
			"new":       data.New,
			"waited_ms": waited.Milliseconds(),
		},
	}, nil
}

// waitRequests returns the requests the caller may see once one of them is
// newer than a.after, or when a.wait has passed, the caller has gone, or
// the Server is closing.
func (s *Server) waitRequests(ctx context.Context, a pendingArgs) *requestsData {
	timer := time.NewTimer(a.wait)
	defer timer.Stop()
	for {
		snap := s.pendingSnapshot()
		data := s.requestsData(ctx, snap, a.after)
		if data.New > 0 || a.wait == 0 {
			return data
		}
		select {
		case <-snap.Changed:
		case <-timer.C:
			return s.requestsData(ctx, s.pendingSnapshot(), a.after)
		case <-ctx.Done():
			return data
		case <-s.done.Done():
			return data
		}
	}
}

// pendingSnapshot returns the broker's pending requests, or an empty
// snapshot that never changes when there is no broker.
func (s *Server) pendingSnapshot() fetch.Snapshot {
	if s.opts.Requests == nil {
		return fetch.Snapshot{}
	}
	return s.opts.Requests.Pending()
}

// requestsData describes the requests of snap the caller may see, counting
// those with an ID greater than after as new.
func (s *Server) requestsData(ctx context.Context, snap fetch.Snapshot, after uint64) *requestsData {
	now := time.Now()
	d := &requestsData{Requests: []requestData{}, Cursor: s.cursor(snap.LastID)}
	if s.opts.Requests != nil {
		d.FetchTimeoutSeconds = s.opts.Requests.Timeout().Seconds()
	}
	for _, r := range snap.Requests {
		if !s.mayWrite(ctx, r.Path) {
			continue
		}
		rd := requestData{
			ID: r.ID, Path: r.Path, MountPath: s.mountPath(r.Path),
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

// cursor encodes the newest request ID with this Server's epoch, so a
// cursor kept across a restart of depotfs (whose IDs start again at 1) is
// recognized as foreign instead of hiding the new run's requests.
func (s *Server) cursor(lastID uint64) string {
	return s.epoch + "-" + strconv.FormatUint(lastID, 10)
}

// errPendingCursor is the problem of a cursor that is not one this tool returned.
var errPendingCursor = fmt.Errorf("%w: not a cursor returned by guide_pending_requests; omit it to list every request", errArgs)

// parseCursor decodes a cursor: the request ID it stands for, or foreign
// true (and ID 0) when it comes from another run of depotfs.
func (s *Server) parseCursor(cur string) (after uint64, foreign bool, err error) {
	epoch, id, ok := strings.Cut(cur, "-")
	if !ok || epoch == "" || len(cur) > 64 {
		return 0, false, errPendingCursor
	}
	if _, err := strconv.ParseUint(epoch, 36, 64); err != nil {
		return 0, false, errPendingCursor
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return 0, false, errPendingCursor
	}
	if epoch != s.epoch {
		return 0, true, nil
	}
	return n, false, nil
}

// pendingResource is the resource listing the pending requests.
func (s *Server) pendingResource() server.ServerResource {
	return server.ServerResource{
		Resource: mcp.NewResource(pendingURI, "Pending file requests",
			mcp.WithResourceDescription("The files programs on the host are waiting for, as guide_pending_requests lists them (JSON). Subscribe to be notified when the list changes; answer a request with guide_cache_file or guide_read_file at its path."),
			mcp.WithMIMEType("application/json"),
		),
		Handler: func(ctx context.Context, _ mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			text, err := json.Marshal(s.requestsData(ctx, s.pendingSnapshot(), 0))
			if err != nil {
				return nil, fmt.Errorf("encode %s: %w", pendingURI, err)
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: pendingURI, MIMEType: "application/json", Text: string(text)}}, nil
		},
	}
}

// pendingChanged tells every client subscribed to the pending-requests
// resource that it changed. It is the broker's Notify callback: it never
// blocks (a notification for a session whose queue is full is dropped).
func (s *Server) pendingChanged() {
	for _, t := range s.subs.to(pendingURI) {
		s.notifyUpdated(t)
	}
}
