package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/depotfs/depotfs/feed"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// ChangesPath is where the HTTP listener serves the change feed (package
// feed) as Server-Sent Events: GET ChangesPath?prefix=/src&since=41. Each
// change is an event "change" whose id is its revision and whose data is
// the change as JSON (feed.Change); a cursor older than the changes kept
// gets one event "resync" (data: oldest, revision, cursor). A reconnecting
// client's Last-Event-ID resumes after that revision. Comments keep the
// stream alive while nothing changes, and an id-only message moves the
// client's cursor past changes it may not see.
const ChangesPath = "/changes"

// changesTool is the tool whose grants the SSE door needs and under whose
// name its requests are audited: the long-poll door, guide_changes.
const changesTool, changesGroup = "guide_changes", "guide"

// changesHeartbeat is how long a stream stays silent at most: a comment
// then keeps proxies from closing it.
const changesHeartbeat = 15 * time.Second

// changesQuery is a parsed GET ChangesPath request.
type changesQuery struct {
	prefix  string
	since   uint64
	fromNow bool // neither since nor Last-Event-ID: from the current revision
}

// errChangesQuery is wrapped by every refusal of a query.
var errChangesQuery = errors.New("bad change feed request")

// parseChangesQuery reads the query string and the Last-Event-ID header
// of a request for the feed: prefix (a depot path, default /) and since
// (a revision, decimal), each at most once and nothing else; a
// Last-Event-ID, the reconnection of an EventSource, takes the place of
// since.
func parseChangesQuery(raw, lastEventID string) (changesQuery, error) {
	q := changesQuery{prefix: depotpath.Root, fromNow: true}
	fail := func(format string, a ...any) (changesQuery, error) {
		return changesQuery{}, fmt.Errorf("%w: "+format, append([]any{errChangesQuery}, a...)...)
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return fail("the query is not URL-encoded: %v", err)
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range vals {
			if !yield(k) {
				return
			}
		}
	}) {
		if k != "prefix" && k != "since" {
			return fail("unknown parameter %q: the parameters are prefix and since", clipped(k))
		}
		if len(vals[k]) != 1 {
			return fail("%s is given %d times", k, len(vals[k]))
		}
	}
	if p, ok := vals["prefix"]; ok {
		clean, err := depotpath.Clean(p[0])
		if err != nil || !strings.HasPrefix(p[0], "/") {
			return fail("prefix %q is not an absolute depot path such as /src", clipped(p[0]))
		}
		q.prefix = clean
	}
	revision := func(name, s string) (uint64, error) {
		if s == "" || strings.TrimLeft(s, "0123456789") != "" {
			return 0, fmt.Errorf("%w: %s %q is not a revision (decimal digits)", errChangesQuery, name, clipped(s))
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %s %q is out of range", errChangesQuery, name, clipped(s))
		}
		return n, nil
	}
	if s, ok := vals["since"]; ok {
		if q.since, err = revision("since", s[0]); err != nil {
			return changesQuery{}, err
		}
		q.fromNow = false
	}
	if lastEventID != "" {
		if q.since, err = revision("Last-Event-ID", lastEventID); err != nil {
			return changesQuery{}, err
		}
		q.fromNow = false
	}
	return q, nil
}

// clipped bounds a client's string in a message.
func clipped(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// serveChanges streams the change feed to the caller, within its grants,
// until the caller goes, its credential is revoked, or the server closes.
// The request is one audited call of guide_changes: refused before the
// stream starts (400, 403) like a call, recorded when it ends with the
// number of changes sent.
func (s *Server) serveChanges(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "follow the change feed with GET", http.StatusMethodNotAllowed)
		return
	}
	if s.done.Err() != nil {
		http.Error(w, "depotfs is shutting down: no new change streams", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.done, cancel)()
	if s.opts.HTTP.Recheck != nil {
		defer s.sessions.open(&stream{cred: credentialOf(r), kind: "changes", cancel: cancel})()
	}
	c := s.rt.NewCall(ctx, changesTool, changesGroup)
	q, err := parseChangesQuery(r.URL.RawQuery, r.Header.Get("Last-Event-ID"))
	if err != nil {
		err = &tool.Refusal{Type: tool.ErrorValidation, Message: err.Error(),
			Instruction: "Ask GET " + ChangesPath + "?prefix=/a/depot/path&since=REVISION (both optional)."}
	}
	c.Path = q.prefix
	if err == nil {
		err = c.Perms().CheckTool(changesTool, changesGroup)
	}
	if err == nil && q.fromNow {
		q.since, err = c.Store().Revision(ctx)
	}
	var page feed.Page
	if err == nil {
		page, err = c.Store().Changes(ctx, feed.Request{Prefix: q.prefix, Since: q.since, Max: feed.MaxMax})
	}
	if errors.Is(err, feed.ErrCursor) {
		err = &tool.Refusal{Type: tool.ErrorValidation, Message: err.Error(),
			Instruction: "Resume from an event id this depot sent, or leave since out to start from now."}
	}
	if err != nil {
		if auditErr := s.rt.Finish(c, err); auditErr != nil {
			http.Error(w, "depotfs cannot write its audit log, so it refuses requests until it can", http.StatusServiceUnavailable)
			return
		}
		f := tool.Classify(err)
		status := http.StatusInternalServerError
		switch f.Type {
		case tool.ErrorValidation:
			status = http.StatusBadRequest
		case tool.ErrorSecurity:
			status = http.StatusForbidden
		}
		http.Error(w, f.Message+"\n"+f.Instruction, status)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sent, err := s.streamChanges(ctx, c, newSSEWriter(w, s.opts.HTTP.BodyIdleTimeout), q, page)
	c.Status = strconv.Itoa(sent)
	if ctx.Err() != nil {
		err = nil // the caller left, or the server closed: a normal end
	}
	_ = s.rt.Finish(c, err)
}

// streamChanges writes page and the pages after it until ctx ends or a
// write fails; it returns the number of changes sent.
func (s *Server) streamChanges(ctx context.Context, c *tool.Call, sw *sseWriter, q changesQuery, page feed.Page) (int, error) {
	sent := 0
	cursor := q.since
	for {
		if err := sw.page(page, cursor); err != nil {
			return sent, err
		}
		sent += len(page.Changes)
		cursor = page.Cursor
		wait := changesHeartbeat
		if page.More {
			wait = 0
		}
		var err error
		page, err = c.Store().Changes(ctx, feed.Request{Prefix: q.prefix, Since: cursor, Max: feed.MaxMax, Wait: wait})
		if err != nil {
			return sent, err
		}
		if ctx.Err() != nil {
			return sent, nil
		}
	}
}

// sseWriter writes Server-Sent Events, each flushed, each write bounded by
// the idle timeout so a client that stops reading is cut off.
type sseWriter struct {
	w    http.ResponseWriter
	ctl  *http.ResponseController
	idle time.Duration
	buf  []byte
}

func newSSEWriter(w http.ResponseWriter, idle time.Duration) *sseWriter {
	return &sseWriter{w: w, ctl: http.NewResponseController(w), idle: idle}
}

// page writes one page of the feed: its changes, or its resync, or,
// when it has neither, the cursor it moved to (an id alone) or a comment.
func (sw *sseWriter) page(p feed.Page, cursor uint64) error {
	sw.buf = sw.buf[:0]
	switch {
	case p.Resync:
		data, _ := json.Marshal(map[string]uint64{"oldest": p.Oldest, "revision": p.Revision, "cursor": p.Cursor})
		sw.buf = fmt.Appendf(sw.buf, "id: %d\nevent: resync\ndata: %s\n\n", p.Cursor, data)
	case len(p.Changes) > 0:
		for _, ch := range p.Changes {
			data, err := json.Marshal(ch)
			if err != nil {
				return err
			}
			sw.buf = fmt.Appendf(sw.buf, "id: %d\nevent: change\ndata: %s\n\n", ch.Revision, data)
		}
		if last := p.Changes[len(p.Changes)-1].Revision; p.Cursor > last {
			sw.buf = fmt.Appendf(sw.buf, "id: %d\n\n", p.Cursor)
		}
	case p.Cursor > cursor:
		sw.buf = fmt.Appendf(sw.buf, "id: %d\n\n", p.Cursor)
	default:
		sw.buf = append(sw.buf, ": keepalive\n\n"...)
	}
	if sw.idle > 0 {
		_ = sw.ctl.SetWriteDeadline(time.Now().Add(sw.idle))
	}
	if _, err := sw.w.Write(sw.buf); err != nil {
		return fmt.Errorf("writing the change stream: %w", err)
	}
	return sw.ctl.Flush()
}
