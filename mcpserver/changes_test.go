package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/feed"
	"github.com/depotfs/depotfs/mcpserver"
)

// sseEvent is one Server-Sent Event: its id, type and data ("" for an
// id-only message or a comment, which sseStream skips but for the id).
type sseEvent struct {
	id, event, data string
}

// sseStream reads the events of a GET of the change feed.
type sseStream struct {
	t      testing.TB
	res    *http.Response
	sc     *bufio.Scanner
	lastID string
}

// openChanges GETs the change feed at base with query and lastID.
func openChanges(t testing.TB, base, query, lastID string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+mcpserver.ChangesPath+"?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return &sseStream{t: t, res: res, sc: bufio.NewScanner(res.Body)}
}

// next returns the next event with data, following ids on the way.
func (s *sseStream) next() sseEvent {
	s.t.Helper()
	var ev sseEvent
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if ev.data != "" {
				return ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
			s.lastID = ev.id
		case strings.HasPrefix(line, "event: "):
			ev.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
	s.t.Fatalf("change stream ended: %v", s.sc.Err())
	return ev
}

// change decodes the next event, which must be a change.
func (s *sseStream) change() feed.Change {
	s.t.Helper()
	ev := s.next()
	var c feed.Change
	if ev.event != "change" || json.Unmarshal([]byte(ev.data), &c) != nil || ev.id != fmt.Sprint(c.Revision) {
		s.t.Fatalf("event %+v, want a change whose id is its revision", ev)
	}
	return c
}

// TestChangesSSE: GET /changes streams the changes below its prefix after
// since, goes on with new ones, resumes from Last-Event-ID, and refuses
// bad requests before the stream starts, naming the fix.
func TestChangesSSE(t *testing.T) {
	h := newHarness(t, nil)
	base := httptestServer(t, h.srv)
	h.put("/src/a", []byte("a"))
	h.put("/other", []byte("o"))
	s := openChanges(t, base, "prefix=/src&since=0", "")
	if s.res.StatusCode != http.StatusOK || s.res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /changes: %s, %s", s.res.Status, s.res.Header.Get("Content-Type"))
	}
	if c := s.change(); c.Path != "/src" || c.Kind != feed.Created {
		t.Fatalf("first change %+v", c)
	}
	a := s.change()
	if a.Path != "/src/a" || a.Size != 1 || len(a.SHA256) != 64 {
		t.Fatalf("second change %+v", a)
	}
	h.put("/other", []byte("o2"))
	h.put("/src/b", []byte("b"))
	b := s.change()
	if b.Path != "/src/b" || b.Revision != h.revision() {
		t.Fatalf("live change %+v at revision %d", b, h.revision())
	}
	// A reconnection with Last-Event-ID resumes after it.
	r := openChanges(t, base, "prefix=/src&since=0", fmt.Sprint(a.Revision))
	if c := r.change(); c != b {
		t.Fatalf("resumed after %d: %+v, want %+v", a.Revision, c, b)
	}

	for _, tc := range []struct {
		method, query string
		status        int
		want          string
	}{
		{http.MethodGet, "since=x", http.StatusBadRequest, "not a revision"},
		{http.MethodGet, "prefix=rel", http.StatusBadRequest, "absolute depot path"},
		{http.MethodGet, "since=" + fmt.Sprint(h.revision()+5), http.StatusBadRequest, "beyond the depot's revision"},
		{http.MethodGet, "wait=1", http.StatusBadRequest, "unknown parameter"},
		{http.MethodPost, "", http.StatusMethodNotAllowed, "GET"},
	} {
		req, _ := http.NewRequest(tc.method, base+mcpserver.ChangesPath+"?"+tc.query, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s ?%s: %d %q; want %d naming %q", tc.method, tc.query, res.StatusCode, body, tc.status, tc.want)
		}
	}
	// Each request is a call of guide_changes in the log (and the audit
	// log, when there is one): the refusals too.
	if n := strings.Count(h.logs.String(), `"tool":"guide_changes"`); n < 4 {
		t.Errorf("%d log lines of guide_changes for the 4 refused GETs:\n%s", n, h.logs.String())
	}
}

// TestChangesSSEEndsOnClose: Close ends an open change stream at once.
func TestChangesSSEEndsOnClose(t *testing.T) {
	h := newHarness(t, nil)
	s := openChanges(t, httptestServer(t, h.srv), "", "")
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, s.res.Body)
		done <- err
	}()
	h.srv.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the change stream outlived Close")
	}
}
