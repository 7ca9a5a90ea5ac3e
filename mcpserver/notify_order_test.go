//lint:file-ignore SA1019 the session-based protocol era (resources/subscribe, the GET stream) is deprecated in mcp-go but still served, and tested here on purpose.

package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestResourceNotificationsInOrderWithCalls: a session that subscribes to
// a directory and keeps making tool calls on the same session, each a
// write below it, gets every change there notified exactly once, in
// revision order, on its GET stream. mcp-go alone hands a session's
// notifications to whichever of its requests in flight takes them first,
// so they arrived out of order, and one taken by a request as it ended was
// lost. A subscriptions/listen (2026-07-28) gets the same on its stream.
func TestResourceNotificationsInOrderWithCalls(t *testing.T) {
	t.Run("session", func(t *testing.T) {
		h := newHarness(t, nil)
		streamOpen := make(chan struct{})
		var once sync.Once
		inner := h.srv.Handler()
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				w = &flushNoted{ResponseWriter: w, first: func() { once.Do(func() { close(streamOpen) }) }}
			}
			inner.ServeHTTP(w, r)
		}))
		t.Cleanup(ts.Close)
		tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithContinuousListening())
		if err != nil {
			t.Fatal(err)
		}
		s := startSubscriber(t, client.NewClient(tr, client.WithProtocolVersion(sessionEra)), sessionEra)
		// A notification sent before the GET stream opened could only
		// ride on a response: the stream is open before anything is
		// subscribed.
		select {
		case <-streamOpen:
		case <-time.After(10 * time.Second):
			t.Fatal("the client opened no GET stream within 10s")
		}
		checkInOrder(t, h, s, 500)
	})
	t.Run("listen", func(t *testing.T) {
		h := newHarness(t, nil)
		checkInOrder(t, h, newSubscriber(t, h.srv, "http", statelessEra), 100)
	})
}

// checkInOrder subscribes s to /feed/ and makes writes tool calls through
// s's client, four at a time, each writing a file below it; then s must
// have been notified of every change below /feed in the change log, once,
// in revision order.
func checkInOrder(t *testing.T, h *harness, s *subscriber, writes int) {
	t.Helper()
	const callers = 4
	from := h.revision()
	s.subscribe("depot:///feed/")

	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range callers {
		wg.Go(func() {
			for i := c; i < writes; i += callers {
				req := mcp.CallToolRequest{}
				req.Params.Name = "guide_cache_file"
				req.Params.Arguments = map[string]any{"path": fmt.Sprintf("/feed/%d/f%03d", c, i), "content": "x"}
				res, err := s.c.CallTool(testerCtx, req)
				if err == nil && res.IsError {
					err = fmt.Errorf("%v", res.Content)
				}
				if err != nil {
					errs <- fmt.Errorf("write %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var want []uint64
	for after := from; ; {
		page, err := h.st.Changes(context.Background(), "/feed", after, 1000)
		if err != nil || page.Resync {
			t.Fatalf("reading the change log: %v (resync %v)", err, page.Resync)
		}
		for _, ev := range page.Events {
			want = append(want, ev.Revision)
		}
		if after = page.Next; len(page.Events) == 0 || after >= page.Revision {
			break
		}
	}
	if len(want) < writes {
		t.Fatalf("the change log holds %d changes below /feed, want at least %d", len(want), writes)
	}
	var got []uint64
	deadline := time.After(30 * time.Second)
	for len(got) < len(want) {
		select {
		case n := <-s.notes:
			if n.Method != string(mcp.MethodNotificationResourceUpdated) {
				continue
			}
			if n.Params.Meta["resync"] != nil {
				t.Fatalf("after %d of %d notifications: %v: the client was told some were lost", len(got), len(want), n.Params.Meta)
			}
			if s.era == statelessEra && n.Params.Meta[mcp.MetaKeySubscriptionID] == nil {
				t.Fatalf("notification without the listen's id: %v", n.Params.Meta)
			}
			rev, _ := n.Params.Meta["revision"].(float64)
			got = append(got, uint64(rev))
		case <-deadline:
			t.Fatalf("%d of %d notifications within 30s after the last write; the last ones received: %v", len(got), len(want), got[max(0, len(got)-5):])
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("notification %d is of revision %d, want %d (%v around it)", i, got[i], want[i], got[max(0, i-3):min(len(got), i+4)])
		}
	}
	select {
	case n := <-s.notes:
		t.Errorf("one notification too many: %v", n.Params.Meta)
	default:
	}
}

// flushNoted calls first after the first flush of a response.
type flushNoted struct {
	http.ResponseWriter
	first func()
}

func (w *flushNoted) Flush() {
	w.ResponseWriter.(http.Flusher).Flush()
	w.first()
}
