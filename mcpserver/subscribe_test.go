//lint:file-ignore SA1019 the session-based protocol era (resources/subscribe, the GET stream) is deprecated in mcp-go but still served, and tested here on purpose.

package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// The two eras of the protocol mcp-go serves: sessions (initialize,
// resources/subscribe, notifications on the session's stream) and the
// stateless core of 2026-07-28 (subscriptions/listen).
const (
	sessionEra   = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	statelessEra = mcp.ProtocolVersion20260728
)

// subscriber is a client that records the notifications it receives.
type subscriber struct {
	t      testing.TB
	c      *client.Client
	era    string
	notes  chan mcp.JSONRPCNotification
	cancel context.CancelFunc // ends a subscriptions/listen stream
	errs   chan error         // why subscriptions/listen streams ended early
	// listenID is the subscription id of the current listen stream, as
	// its acknowledgement named it ("" before one).
	listenID string
}

// newSubscriber connects a client to srv over kind ("inprocess", "http",
// "stdio") speaking the given protocol era.
func newSubscriber(t testing.TB, srv *mcpserver.Server, kind, era string) *subscriber {
	t.Helper()
	opts := []client.ClientOption{client.WithProtocolVersion(era)}
	var tr transport.Interface
	switch kind {
	case "inprocess":
		tr = transport.NewInProcessTransport(srv.MCP())
	case "http":
		var hopts []transport.StreamableHTTPCOption
		if era == sessionEra {
			hopts = append(hopts, transport.WithContinuousListening())
		}
		var err error
		if tr, err = transport.NewStreamableHTTP(httptestServer(t, srv), hopts...); err != nil {
			t.Fatal(err)
		}
	case "stdio":
		return newStdioSubscriber(t, srv, era)
	default:
		t.Fatalf("unknown transport %q", kind)
	}
	return startSubscriber(t, client.NewClient(tr, opts...), era)
}

// newStdioSubscriber serves srv over a pair of pipes. At cleanup, after
// the client has closed, both pipes close: a reply still in flight (the
// end of a subscriptions/listen) fails instead of blocking ServeStdio.
func newStdioSubscriber(t testing.TB, srv *mcpserver.Server, era string) *subscriber {
	t.Helper()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), toServer, fromServer) }()
	t.Cleanup(func() {
		toClient.Close()
		fromClient.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return startSubscriber(t, client.NewClient(transport.NewIO(toClient, fromClient, nil), client.WithProtocolVersion(era)), era)
}

func startSubscriber(t testing.TB, c *client.Client, era string) *subscriber {
	t.Helper()
	s := &subscriber{t: t, c: c, era: era, notes: make(chan mcp.JSONRPCNotification, 1000), cancel: func() {}, errs: make(chan error, 10)}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case s.notes <- n:
		default:
			t.Errorf("notification queue full, dropped %s", n.Method)
		}
	})
	startClient(t, c)
	if got := c.ProtocolVersion(); got != era {
		t.Fatalf("negotiated protocol %s, want %s", got, era)
	}
	t.Cleanup(func() { s.cancel() })
	return s
}

// subscribe subscribes to uris the way the client's era does: one
// resources/subscribe each, or one subscriptions/listen stream naming them
// all, returning once the server has acknowledged them.
func (s *subscriber) subscribe(uris ...string) {
	s.t.Helper()
	ctx := testerCtx
	for _, uri := range uris {
		req := mcp.SubscribeRequest{}
		req.Params.URI = uri
		if err := s.c.Subscribe(ctx, req); err != nil {
			s.t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	if s.era == sessionEra {
		return
	}
	s.cancel()
	stop, err := s.c.ListenAsync(ctx, s.c.PendingSubscriptionFilter(), func(err error) {
		select {
		case s.errs <- err:
		default:
		}
	})
	if err != nil {
		s.t.Fatalf("listen: %v", err)
	}
	s.cancel = stop
	s.listenID = ""
	n := s.next(mcp.MethodNotificationSubscriptionsAcknowledged)
	s.listenID = subscriptionID(n)
	var ack struct {
		Notifications mcp.SubscriptionFilter `json:"notifications"`
	}
	raw, _ := json.Marshal(n.Params.AdditionalFields)
	if err := json.Unmarshal(raw, &ack); err != nil || len(ack.Notifications.ResourceSubscriptions) != len(s.c.PendingSubscriptionFilter().ResourceSubscriptions) {
		s.t.Fatalf("acknowledged %s, want %q", raw, s.c.PendingSubscriptionFilter().ResourceSubscriptions)
	}
}

// unsubscribe ends the subscription to uri.
func (s *subscriber) unsubscribe(uri string) {
	s.t.Helper()
	req := mcp.UnsubscribeRequest{}
	req.Params.URI = uri
	if err := s.c.Unsubscribe(testerCtx, req); err != nil {
		s.t.Fatalf("unsubscribe %s: %v", uri, err)
	}
}

// next returns the next notification of the given method, skipping others.
func (s *subscriber) next(method string) mcp.JSONRPCNotification {
	s.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case n := <-s.notes:
			// A listen the client ended may still notify until the server
			// has taken the cancellation in: over stdio, where every
			// stream shares one pipe, its notifications arrive with the
			// new stream's, tagged with the old id.
			if id := subscriptionID(n); s.listenID != "" && id != "" && id != s.listenID {
				continue
			}
			if n.Method == method {
				return n
			}
		case <-deadline:
			s.t.Fatalf("no %s notification within 10s", method)
		}
	}
}

// subscriptionID returns the subscription id n is tagged with, "" if none.
func subscriptionID(n mcp.JSONRPCNotification) string {
	id, ok := n.Params.Meta[mcp.MetaKeySubscriptionID]
	if !ok {
		return ""
	}
	return fmt.Sprint(id)
}

// updated returns the URI of the next resources/updated notification.
func (s *subscriber) updated() string {
	s.t.Helper()
	uri, _ := s.next(mcp.MethodNotificationResourceUpdated).Params.AdditionalFields["uri"].(string)
	return uri
}

// TestResourceSubscriptions subscribes over every transport and both
// protocol eras, then changes files: each change to a subscribed file is
// notified, in order, with the URI as subscribed, and nothing else is.
func TestResourceSubscriptions(t *testing.T) {
	for _, kind := range []string{"inprocess", "http", "stdio"} {
		for _, era := range []string{sessionEra, statelessEra} {
			t.Run(kind+"/"+era, func(t *testing.T) {
				h := newHarness(t, nil)
				s := newSubscriber(t, h.srv, kind, era)
				watched := mcpserver.ResourceURI("/w/a file.txt")
				other := "depot:///w/b%2Etxt" // another spelling of /w/b.txt
				dropped := mcpserver.ResourceURI("/w/dropped")
				s.subscribe(watched, other, dropped)
				if era == sessionEra {
					s.unsubscribe(dropped)
				} else {
					req := mcp.UnsubscribeRequest{}
					req.Params.URI = dropped
					_ = s.c.Unsubscribe(testerCtx, req)
					s.subscribe() // reopen the stream without it
				}

				h.put("/w/dropped", []byte("not watched any more"))
				h.put("/w/unwatched", []byte("never watched"))
				h.put("/w/a file.txt", []byte("v1")) // created
				h.put("/w/a file.txt", []byte("v2")) // updated
				h.put("/w/b.txt", []byte("b"))
				if err := h.st.Remove(context.Background(), store.RemoveRequest{Path: "/w", Recursive: true}); err != nil {
					t.Fatal(err)
				}
				for i, want := range []string{watched, watched, other, watched, other} {
					if got := s.updated(); got != want {
						t.Fatalf("notification %d for %s, want %s", i, got, want)
					}
				}
			})
		}
	}
}

// TestResourceSubscriptionPlaceholder subscribes to a listed file whose
// content has not arrived and is notified when it does.
func TestResourceSubscriptionPlaceholder(t *testing.T) {
	h := newHarness(t, nil)
	h.ok("guide_list_directory", m{"path": "/later", "entries": []any{m{"name": "report.pdf", "type": "file", "size": 3}}}, nil)
	s := newSubscriber(t, h.srv, "inprocess", sessionEra)
	uri := mcpserver.ResourceURI("/later/report.pdf")
	s.subscribe(uri)
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	if _, err := s.c.ReadResource(testerCtx, req); err == nil || !strings.Contains(err.Error(), "not arrived") {
		t.Fatalf("read of a placeholder: %v", err)
	}
	h.ok("guide_cache_file", m{"path": "/later/report.pdf", "content": "pdf"}, nil)
	if got := s.updated(); got != uri {
		t.Fatalf("notified %s", got)
	}
	res, err := s.c.ReadResource(testerCtx, req)
	if err != nil || res.Contents[0].(mcp.BlobResourceContents).Blob == "" && res.Contents[0].(mcp.TextResourceContents).Text != "pdf" {
		t.Fatalf("read after arrival: %+v, %v", res, err)
	}
}

func TestResourceSubscribeRefused(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, MaxSubscriptions: 2}})
	url := httptestServer(t, h.srv)

	// 2026-07-28 removed resources/subscribe: 404 with method not found,
	// as its transport requires of a removed method.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"depot:///a",`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"`+statelessEra+`","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set(mcp.HeaderProtocolVersion, statelessEra)
	req.Header.Set(mcp.HeaderMethod, string(mcp.MethodResourcesSubscribe))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		Error *struct{ Code int } `json:"error"`
	}
	err = json.NewDecoder(res.Body).Decode(&reply)
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || err != nil || reply.Error == nil || reply.Error.Code != mcp.METHOD_NOT_FOUND {
		t.Errorf("stateless resources/subscribe: HTTP %d, %+v (%v); want 404 and -32601", res.StatusCode, reply.Error, err)
	}

	s := newSubscriber(t, h.srv, "inprocess", sessionEra)
	for _, tc := range []struct{ uri, want string }{
		{"file:///etc/passwd", "does not start with depot:///"},
		{"depot:///../x", "escape"},
		{"depot:///ok/1", ""},
		{"depot:///ok/1", ""}, // the same subscription again
		{"depot:///ok/2", ""},
		{"depot:///ok/3", "too many resource subscriptions"},
	} {
		req := mcp.SubscribeRequest{}
		req.Params.URI = tc.uri
		err := s.c.Subscribe(testerCtx, req)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("subscribe %s: %v, want %q", tc.uri, err, tc.want)
		}
	}

	l := newSubscriber(t, h.srv, "inprocess", statelessEra)
	err = l.c.Listen(testerCtx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"depot:///x?y"}})
	if err == nil || !strings.Contains(err.Error(), "query or fragment") {
		t.Errorf("listen with a bad URI: %v", err)
	}
}

// TestHTTPShutdownWithStreams opens both kinds of notification stream over
// HTTP, then shuts down as depotfs does: Close, then http.Server.Shutdown,
// which must return promptly rather than wait for the streams.
func TestHTTPShutdownWithStreams(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := mcpserver.New(st, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	url := "http://" + ln.Addr().String()

	var subs []*subscriber
	for _, era := range []string{sessionEra, statelessEra} {
		tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
		if era == statelessEra {
			tr, err = transport.NewStreamableHTTP(url)
		}
		if err != nil {
			t.Fatal(err)
		}
		s := startSubscriber(t, client.NewClient(tr, client.WithProtocolVersion(era)), era)
		s.subscribe(mcpserver.ResourceURI("/f"))
		subs = append(subs, s)
	}
	if _, err := st.Put(context.Background(), store.PutRequest{Path: "/f", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		if got := s.updated(); got != "depot:///f" { // the streams are open and deliver
			t.Fatalf("notified %s", got)
		}
		select {
		case err := <-s.errs:
			t.Fatalf("the listen stream ended before Close: %v", err)
		default:
		}
	}

	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with open streams: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	res, err := http.Get(url)
	if err == nil {
		res.Body.Close()
		t.Errorf("GET after shutdown: %s", res.Status)
	}
}

// TestHTTPStreamAfterClose refuses new streams once the Server is closed,
// while calls still work.
func TestHTTPStreamAfterClose(t *testing.T) {
	h := newHarnessOver(t, nil, "http")
	url := httptestServer(t, h.srv)
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET stream after Close: %s, want 503", res.Status)
	}
	h.ok("guide_cache_file", m{"path": "/after-close", "content": "x"}, nil)
	if err := h.srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestResourceNotificationsWithoutStream subscribes on a session that opens
// no GET stream and sends nothing more: notifications queue in the session
// (100 deep) while writes go on unhindered, the overflow is dropped and
// logged once, and the reply to the client's next request carries the
// queued ones.
func TestResourceNotificationsWithoutStream(t *testing.T) {
	h := newHarness(t, nil)
	tr, err := transport.NewStreamableHTTP(httptestServer(t, h.srv))
	if err != nil {
		t.Fatal(err)
	}
	s := startSubscriber(t, client.NewClient(tr, client.WithProtocolVersion(sessionEra)), sessionEra)
	uri := mcpserver.ResourceURI("/busy")
	s.subscribe(uri)
	const writes = 150
	for i := range writes {
		h.put("/busy", []byte(fmt.Sprint(i)))
	}
	waitUntil(t, "the watcher to drop the overflow", func() bool {
		return strings.Contains(h.logs.String(), "mcp resource notifications dropped")
	})
	if n := strings.Count(h.logs.String(), "mcp resource notifications dropped"); n != 1 {
		t.Errorf("%d log lines about dropped notifications, want 1", n)
	}
	if _, err := s.c.ListTools(testerCtx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	// The reply to ListTools carried the queue, and perhaps some of the
	// overflow that arrived meanwhile. mcp-go's per-request forwarder may
	// lose the one notification it holds when the request ends.
	if n := len(s.notes); n < 99 || n > writes {
		t.Fatalf("%d notifications with the next reply, want the 100 queued (up to %d)", n, writes)
	}
	// The watcher may still be handing over the last writes when the
	// queue drains: the first of them to find room again is then in this
	// reply, marked resync, and is the notification checked below.
	var lastRev float64
	for len(s.notes) > 0 {
		n := <-s.notes
		if n.Params.AdditionalFields["uri"] != uri {
			t.Fatalf("notified %v %v", n.Params.AdditionalFields, n.Params.Meta)
		}
		if n.Params.Meta["resync"] != nil {
			checkResync(t, n, lastRev, n.Params.Meta["revision"].(float64))
			return
		}
		lastRev = max(lastRev, n.Params.Meta["revision"].(float64))
	}
	// The next notification that reaches the client says some were lost,
	// and after which revision, so it can read them from the feed.
	rev := h.put("/busy", []byte("after")).Revision
	deadline := time.Now().Add(3 * time.Second)
	for len(s.notes) == 0 {
		if time.Now().After(deadline) {
			// mcp-go's forwarder lost it, as above (one run in five):
			// depotfs queued it, so nothing more is to be checked here.
			t.Log("the notification after the drops never reached the client: lost by mcp-go's per-request forwarder")
			return
		}
		if _, err := s.c.ListTools(testerCtx, mcp.ListToolsRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	checkResync(t, <-s.notes, lastRev, float64(rev))
}

// checkResync checks that n, the first notification after drops, says so:
// resync, revision rev, and lost_after from lastRev (the last revision
// received) to below rev.
func checkResync(t *testing.T, n mcp.JSONRPCNotification, lastRev, rev float64) {
	t.Helper()
	lost, _ := n.Params.Meta["lost_after"].(float64)
	if n.Params.Meta["resync"] != true || n.Params.Meta["revision"] != rev || lost < lastRev || lost >= rev {
		t.Fatalf("first notification after the drops: %v; want resync, revision %v, lost_after from %v (the last one received) to below it", n.Params.Meta, rev, lastRev)
	}
}

// waitUntil polls cond until it holds, failing after 10 seconds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestResourceNotificationAfterMount checks that a subscriber is notified
// only once Options.Applied (the mount) has confirmed the change.
func TestResourceNotificationAfterMount(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var waited []uint64
	h := newHarness(t, &mcpserver.Options{
		Settings: mcpserver.Settings{MountPoint: testMount, Applied: func(ctx context.Context, rev uint64) error {
			mu.Lock()
			waited = append(waited, rev)
			mu.Unlock()
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}},
	})
	s := newSubscriber(t, h.srv, "inprocess", sessionEra)
	s.subscribe(mcpserver.ResourceURI("/m"))
	e := h.put("/m", []byte("x"))
	waitUntil(t, "the watcher to wait for the mount", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(waited, e.Revision)
	})
	if len(s.notes) != 0 {
		t.Fatal("notified before the mount confirmed the change")
	}
	close(release)
	if got := s.updated(); got != "depot:///m" {
		t.Fatalf("notified %s", got)
	}
}

// TestResourceSubscriptionPrefix: a subscription to a directory, spelled
// with or without a trailing slash, or to the root, is told of every
// change below it, with the change in _meta; one to a sibling is not.
func TestResourceSubscriptionPrefix(t *testing.T) {
	for _, kind := range []string{"inprocess", "http"} {
		t.Run(kind, func(t *testing.T) {
			h := newHarness(t, nil)
			s := newSubscriber(t, h.srv, kind, sessionEra)
			s.subscribe("depot:///src/")
			h.put("/doc/x", []byte("x"))
			a := h.put("/src/deep/a.go", []byte("a"))
			if err := h.st.Remove(context.Background(), store.RemoveRequest{Path: "/src/deep", Recursive: true}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for range 6 { // created /src, /src/deep, /src/deep/a.go; removed a.go, deep and /src, a parent only
				n := s.next(string(mcp.MethodNotificationResourceUpdated))
				meta := n.Params.Meta
				if n.Params.AdditionalFields["uri"] != "depot:///src/" || meta == nil {
					t.Fatalf("notification %+v", n.Params)
				}
				got = append(got, fmt.Sprintf("%v %v", meta["kind"], meta["path"]))
				if meta["path"] == "/src/deep/a.go" && meta["kind"] == "created" && (meta["sha256"] != a.SHA256 || fmt.Sprint(meta["revision"]) != fmt.Sprint(a.Revision)) {
					t.Errorf("notification of a.go: %+v, want sha256 %s at %d", meta, a.SHA256, a.Revision)
				}
			}
			want := "[created /src created /src/deep created /src/deep/a.go removed /src/deep/a.go removed /src/deep removed /src]"
			if fmt.Sprint(got) != want {
				t.Errorf("notifications %v, want %s", got, want)
			}
			select {
			case n := <-s.notes:
				t.Errorf("one notification too many: %+v", n.Params)
			default:
			}
		})
	}
}

// TestResourceSubscriptionMoves: a move within a subscriber's grants is
// "moved" with from, its old side "removed"; a move from a path outside
// them is, to that subscriber, a creation that names no source.
func TestResourceSubscriptionMoves(t *testing.T) {
	g, err := grant.Parse("*:/in:r")
	if err != nil {
		t.Fatal(err)
	}
	// In-process clients have full grants; over HTTP, LocalGrants apply.
	h := newHarness(t, &mcpserver.Options{LocalGrants: []grant.Grant{g}, Settings: mcpserver.Settings{MountPoint: testMount}})
	s := newSubscriber(t, h.srv, "http", sessionEra)
	s.subscribe("depot:///")
	h.put("/out/secret-name", []byte("x"))
	for _, m := range []store.MoveRequest{{From: "/out/secret-name", To: "/in/x"}, {From: "/in/x", To: "/in/y"}} {
		if _, err := h.st.Move(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range 4 {
		meta := s.next(string(mcp.MethodNotificationResourceUpdated)).Params.Meta
		got = append(got, fmt.Sprintf("%v %v %v", meta["kind"], meta["path"], meta["from"]))
	}
	if want := "[created /in <nil> created /in/x <nil> moved /in/y /in/x removed /in/x <nil>]"; fmt.Sprint(got) != want {
		t.Errorf("notifications %v, want %s", got, want)
	}
	select {
	case n := <-s.notes:
		t.Errorf("one notification too many: %+v", n.Params)
	default:
	}
}
