package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/store"
)

// requestsReply mirrors the data of guide_pending_requests.
type requestsReply struct {
	Requests []struct {
		ID             uint64  `json:"id"`
		Path           string  `json:"path"`
		MountPath      string  `json:"mount_path"`
		Size           int64   `json:"size"`
		MTime          string  `json:"mtime"`
		SHA256         string  `json:"sha256"`
		Since          string  `json:"since"`
		WaitingSeconds float64 `json:"waiting_seconds"`
		Waiters        int     `json:"waiters"`
	} `json:"requests"`
	Count               int     `json:"count"`
	New                 int     `json:"new"`
	Cursor              string  `json:"cursor"`
	FetchTimeoutSeconds float64 `json:"fetch_timeout_seconds"`
}

// declare lists a file without content.
func (h *harness) declare(p string, size int64, mtime time.Time) {
	h.t.Helper()
	if _, err := h.st.Declare(context.Background(), store.DeclareRequest{Entries: []store.Declaration{
		{Path: p, Kind: store.KindFile, Size: size, MTime: mtime},
	}}); err != nil {
		h.t.Fatal(err)
	}
}

// reader starts a reader of p through the broker, as the mount would, and
// returns where its outcome arrives and how to make it give up.
func (h *harness) reader(p string) (<-chan error, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		c, err := h.broker.Fetch(ctx, p)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	h.t.Cleanup(func() {
		cancel()
		<-exited
	})
	return done, cancel
}

// waitRequests polls until the broker has n pending requests and w
// readers waiting in all.
func (h *harness) waitRequests(n, w int) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s := h.broker.Stats(); s.Pending != n || s.Waiting != w; s = h.broker.Stats() {
		if time.Now().After(deadline) {
			h.t.Fatalf("waiting for %d pending requests, %d readers: %+v", n, w, s)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPendingRequests(t *testing.T) {
	h := startHarness(t, harnessConfig{fetchTimeout: time.Minute})
	var d requestsReply
	env := h.ok("guide_pending_requests", m{}, &d)
	if d.Count != 0 || d.New != 0 || len(d.Requests) != 0 || d.Cursor == "" || d.FetchTimeoutSeconds != 60 {
		t.Fatalf("empty list: %+v", d)
	}
	if !strings.Contains(env.Message, "No program") {
		t.Errorf("message %q", env.Message)
	}
	empty := d.Cursor

	mtime := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	h.declare("/want/data.csv", 52114, mtime)
	done, _ := h.reader("/want/data.csv")
	h.reader("/want/data.csv")
	h.waitRequests(1, 2)

	env = h.ok("guide_pending_requests", m{"cursor": empty}, &d)
	if d.Count != 1 || d.New != 1 || d.Cursor == empty {
		t.Fatalf("one request: %+v", d)
	}
	r := d.Requests[0]
	if r.ID != 1 || r.Path != "/want/data.csv" || r.MountPath != testMount+"/want/data.csv" || r.Size != 52114 ||
		r.MTime != "2024-05-01T12:00:00Z" || r.Waiters != 2 || r.WaitingSeconds < 0 || r.Since == "" {
		t.Errorf("request %+v", r)
	}
	if !strings.Contains(env.Message, "guide_read_file") || env.Stats["pending"] != float64(1) {
		t.Errorf("message %q stats %v", env.Message, env.Stats)
	}
	// With the newest cursor, the same request is listed but not new.
	h.ok("guide_pending_requests", m{"cursor": d.Cursor}, &d)
	if d.Count != 1 || d.New != 0 {
		t.Errorf("with the newest cursor: %+v", d)
	}

	// Answering is an ordinary write; the readers get the content.
	h.ok("guide_cache_file", m{"path": "/want/data.csv", "content": "a,b\n"}, nil)
	if err := <-done; err != nil {
		t.Fatalf("reader: %v", err)
	}
	h.waitRequests(0, 0)
	h.ok("guide_pending_requests", m{}, &d)
	if d.Count != 0 {
		t.Errorf("after the answer: %+v", d)
	}
}

// TestPendingRequestsLongPoll checks that a waiting call returns as soon
// as a new request appears, and otherwise when its time is up.
func TestPendingRequestsLongPoll(t *testing.T) {
	h := startHarness(t, harnessConfig{fetchTimeout: time.Minute})
	var d requestsReply
	h.ok("guide_pending_requests", m{}, &d)
	cursor := d.Cursor
	// In two directories: the first reader in a directory asks for all
	// its placeholders at once.
	h.declare("/a/f", 1, time.Time{})
	h.declare("/b/f", 1, time.Time{})

	type polled struct {
		env  envelope
		data requestsReply
		took time.Duration
	}
	poll := func(args m) <-chan polled {
		out := make(chan polled, 1)
		go func() {
			start := time.Now()
			res, err := h.client.CallTool(h.ctx, callRequest("guide_pending_requests", args))
			var p polled
			p.took = time.Since(start)
			if err == nil {
				_ = json.Unmarshal(res.RawStructuredContent, &p.env)
				_ = json.Unmarshal(p.env.Data, &p.data)
			}
			out <- p
		}()
		return out
	}

	// Nothing pending: the poll waits until a reader asks.
	out := poll(m{"wait_seconds": 30, "cursor": cursor})
	time.Sleep(50 * time.Millisecond) // a head start for the poll; the test holds whichever comes first
	h.reader("/a/f")
	p := <-out
	if !p.env.Success || p.data.New != 1 || p.data.Requests[0].Path != "/a/f" || p.took > 20*time.Second {
		t.Fatalf("poll for the first request: %+v after %v", p.data, p.took)
	}
	cursor = p.data.Cursor

	// Something pending but nothing new: the poll waits for the next one.
	out = poll(m{"wait_seconds": 30, "cursor": cursor})
	h.reader("/b/f")
	p = <-out
	if p.data.New != 1 || p.data.Count != 2 || p.took > 20*time.Second {
		t.Fatalf("poll for the second request: %+v after %v", p.data, p.took)
	}

	// Nothing new at all: the poll ends when its time is up.
	p = <-poll(m{"wait_seconds": 1, "cursor": p.data.Cursor})
	if !p.env.Success || p.data.New != 0 || p.data.Count != 2 || p.took < time.Second {
		t.Fatalf("poll with nothing new: %+v after %v", p.data, p.took)
	}

	// Close ends a poll in progress at once.
	out = poll(m{"wait_seconds": 60, "cursor": p.data.Cursor})
	time.Sleep(50 * time.Millisecond)
	h.srv.Close()
	select {
	case p = <-out:
		if !p.env.Success || p.took > 30*time.Second {
			t.Errorf("poll ended by Close: %+v after %v", p.env, p.took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the long poll")
	}
}

func callRequest(tool string, args any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	return req
}

func TestPendingRequestsCursorFromAnotherRun(t *testing.T) {
	h := startHarness(t, harnessConfig{fetchTimeout: time.Minute})
	h.declare("/a", 1, time.Time{})
	h.reader("/a")
	h.waitRequests(1, 1)
	var d requestsReply
	env := h.ok("guide_pending_requests", m{"cursor": "zzzzzz-99"}, &d)
	if d.New != 1 || len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], "earlier run") {
		t.Errorf("foreign cursor: %+v, warnings %q", d, env.Warnings)
	}
}

func TestPendingRequestsWithoutBroker(t *testing.T) {
	h := newHarness(t, nil)
	var d requestsReply
	start := time.Now()
	env := h.ok("guide_pending_requests", m{"wait_seconds": 1}, &d)
	if d.Count != 0 || len(env.Warnings) != 1 || time.Since(start) < time.Second {
		t.Errorf("without a broker: %+v, warnings %q, after %v", d, env.Warnings, time.Since(start))
	}
}

func TestPendingRequestsBadInput(t *testing.T) {
	h := startHarness(t, harnessConfig{fetchTimeout: time.Minute})
	tests := []struct {
		name string
		args any
		want string
	}{
		{"wait too long", m{"wait_seconds": 61}, "above the maximum 60"},
		{"negative wait", m{"wait_seconds": -1}, "below the minimum 0"},
		{"fractional wait", m{"wait_seconds": 1.5}, "integer"},
		{"wait in words", m{"wait_seconds": "five"}, "string of decimal digits"},
		{"null wait", m{"wait_seconds": nil}, "null"},
		{"malformed cursor", m{"cursor": "garbage"}, "not a cursor"},
		{"cursor without an id", m{"cursor": "abc-"}, "not a cursor"},
		{"numeric cursor", m{"cursor": 5}, "expected string, got number"},
		{"unknown argument", m{"wait": 5}, `unknown argument(s) "wait"`},
		{"not an object", json.RawMessage(`[]`), "expected an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			rev := h.revision()
			env := h.fail("guide_pending_requests", tt.args, "validation")
			if !strings.Contains(env.Error.Message, tt.want) {
				t.Errorf("message %q does not say %q", env.Error.Message, tt.want)
			}
			if h.revision() != rev || h.broker.Stats().Requested != 0 {
				t.Errorf("a refused call changed something")
			}
		})
	}
}

// TestPendingRequestsResource checks the resource's content, and that a
// subscribed client is told of every change (subscribing with
// resources/subscribe up to protocol 2025-11-25, with subscriptions/listen
// from 2026-07-28), and an unsubscribed one no more.
func TestPendingRequestsResource(t *testing.T) {
	for _, version := range []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LATEST_PROTOCOL_VERSION} {
		t.Run(version, func(t *testing.T) {
			h := startHarness(t, harnessConfig{fetchTimeout: time.Minute})
			ctx := h.ctx
			c := mustInProcess(t, h.srv)
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			var mu sync.Mutex
			var updates []string
			acked := make(chan struct{}, 1)
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				mu.Lock()
				defer mu.Unlock()
				switch n.Method {
				case mcp.MethodNotificationResourceUpdated:
					uri, _ := n.Params.AdditionalFields["uri"].(string)
					updates = append(updates, uri)
				case mcp.MethodNotificationSubscriptionsAcknowledged:
					select {
					case acked <- struct{}{}:
					default:
					}
				}
			})
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = version
			init.Params.ClientInfo = mcp.Implementation{Name: "subscriber", Version: "1"}
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatal(err)
			}
			count := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(updates)
			}
			waitUpdates := func(n int) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for count() < n {
					if time.Now().After(deadline) {
						t.Fatalf("got %d update notifications, want %d", count(), n)
					}
					time.Sleep(time.Millisecond)
				}
			}

			list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != "depotfs://pending-requests" || list.Resources[0].MIMEType != "application/json" {
				t.Fatalf("resources %+v, %v", list, err)
			}
			unsubscribe := subscribe(t, c, version, acked)

			h.declare("/r", 3, time.Time{})
			_, giveUp := h.reader("/r")
			waitUpdates(1) // published
			read := mcp.ReadResourceRequest{}
			read.Params.URI = "depotfs://pending-requests"
			res, err := c.ReadResource(ctx, read)
			if err != nil || len(res.Contents) != 1 {
				t.Fatalf("read resource: %+v, %v", res, err)
			}
			text, ok := res.Contents[0].(mcp.TextResourceContents)
			if !ok {
				t.Fatalf("resource content %T", res.Contents[0])
			}
			var d requestsReply
			if err := json.Unmarshal([]byte(text.Text), &d); err != nil || d.Count != 1 || d.Requests[0].Path != "/r" {
				t.Fatalf("resource content %s (%v)", text.Text, err)
			}

			giveUp()
			waitUpdates(2) // withdrawn
			mu.Lock()
			for _, uri := range updates {
				if uri != "depotfs://pending-requests" {
					t.Errorf("notification for %q", uri)
				}
			}
			mu.Unlock()

			unsubscribe()
			done, _ := h.reader("/r")
			h.waitRequests(1, 1)
			h.ok("guide_cache_file", m{"path": "/r", "content": "abc"}, nil)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			h.waitRequests(0, 0)
			if _, err := c.ListResources(ctx, mcp.ListResourcesRequest{}); err != nil { // a round trip: a stray notification would have arrived
				t.Fatal(err)
			}
			if n := count(); n != 2 {
				t.Errorf("%d notifications after unsubscribing, want none", n-2)
			}
		})
	}
}

// subscribe subscribes c to the pending-requests resource the way its
// protocol version allows, and returns how to unsubscribe.
func subscribe(t *testing.T, c *client.Client, version string, acked <-chan struct{}) (unsubscribe func()) {
	t.Helper()
	ctx := context.Background()
	const uri = "depotfs://pending-requests"
	if version == mcp.LATEST_PROTOCOL_VERSION {
		stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}}, func(err error) { t.Errorf("listen: %v", err) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		select {
		case <-acked:
		case <-time.After(10 * time.Second):
			t.Fatal("subscriptions/listen was not acknowledged")
		}
		return stop
	}
	sub := mcp.SubscribeRequest{}
	sub.Params.URI = uri
	//lint:ignore SA1019 protocol 2025-11-25's resources/subscribe is what this case tests
	if err := c.Subscribe(ctx, sub); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	return func() {
		unsub := mcp.UnsubscribeRequest{}
		unsub.Params.URI = uri
		//lint:ignore SA1019 protocol 2025-11-25's resources/unsubscribe is what this case tests
		if err := c.Unsubscribe(ctx, unsub); err != nil {
			t.Fatalf("unsubscribe: %v", err)
		}
	}
}
