package integration_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// feedChange is one change as the feed's doors send it.
type feedChange struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"`
	From     string `json:"from"`
	Type     string `json:"type"`
	Revision uint64 `json:"revision"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Count    int    `json:"count"`
}

// feedPage is the data of a guide_changes reply.
type feedPage struct {
	Changes  []feedChange `json:"changes"`
	Cursor   uint64       `json:"cursor"`
	Revision uint64       `json:"revision"`
	More     bool         `json:"more"`
	Resync   bool         `json:"resync"`
	Oldest   uint64       `json:"oldest"`
}

// feedLog is what one reader of the feed received, in order.
type feedLog struct {
	name string

	mu       sync.Mutex
	changes  []feedChange
	cursor   uint64
	resyncs  int
	pushed   int // changes a subscription notification brought
	caughtUp int // changes a subscriber read from guide_changes after a gap
	refused  int // calls that refused a cursor this depot gave
	errs     []string
}

func (l *feedLog) add(cs []feedChange, cursor uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, cs...)
	l.cursor = max(l.cursor, cursor)
}

func (l *feedLog) at() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cursor
}

func (l *feedLog) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.Contains(err.Error(), "beyond the depot's revision") {
		l.refused++
	}
	if len(l.errs) < 5 {
		l.errs = append(l.errs, err.Error())
	}
}

// endpoint is a depotfs URL readers follow across restarts.
type endpoint struct{ url atomic.Pointer[string] }

func (e *endpoint) set(u string) { e.url.Store(&u) }
func (e *endpoint) get() string  { return *e.url.Load() }

// sdkSession connects the official Go SDK client to url with a bearer
// token ("" for none); updates receives each resource notification's
// _meta.
func sdkSession(ctx context.Context, url, token string, updates chan<- map[string]any) (*sdk.ClientSession, error) {
	var hc *http.Client
	if token != "" {
		hc = &http.Client{Transport: bearerTransport{token}}
	}
	opts := &sdk.ClientOptions{}
	if updates != nil {
		opts.ResourceUpdatedHandler = func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			updates <- map[string]any(req.Params.Meta)
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "depotfs-feed-test", Version: "1"}, opts)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return client.Connect(cctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
}

// pollChanges calls guide_changes once.
func pollChanges(ctx context.Context, cs *sdk.ClientSession, prefix string, since uint64, waitMS int) (feedPage, error) {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "guide_changes", Arguments: map[string]any{
		"prefix": prefix, "since": since, "wait_ms": waitMS, "max": 1000}})
	if err != nil {
		return feedPage{}, err
	}
	var env struct {
		Success bool     `json:"success"`
		Data    feedPage `json:"data"`
		Error   *struct{ Type, Message string }
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &env); err != nil {
		return feedPage{}, err
	}
	if !env.Success {
		return feedPage{}, fmt.Errorf("guide_changes: %+v", env.Error)
	}
	return env.Data, nil
}

// retry waits a moment before a reader reconnects to a restarting server.
func retry(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(50 * time.Millisecond):
		return true
	}
}

// longPoll follows prefix with guide_changes through the Go SDK until ctx
// ends, reconnecting (to the endpoint's current URL) whenever a call fails.
func longPoll(ctx context.Context, ep *endpoint, token, prefix string, l *feedLog) {
	for ctx.Err() == nil {
		cs, err := sdkSession(ctx, ep.get(), token, nil)
		if err != nil {
			l.fail(err)
			retry(ctx)
			continue
		}
		for ctx.Err() == nil {
			page, err := pollChanges(ctx, cs, prefix, l.at(), 500)
			if err != nil {
				l.fail(err)
				break
			}
			if page.Resync {
				l.mu.Lock()
				l.resyncs++
				l.mu.Unlock()
			}
			l.add(page.Changes, page.Cursor)
		}
		cs.Close()
		retry(ctx)
	}
}

// subscribe follows uri with a resource subscription through the Go SDK
// until ctx ends. A notification carries its change; after a reconnection,
// or a notification saying some were lost, the subscriber reads what it
// missed from guide_changes (from the last revision it has), then goes on
// with notifications newer than that. Its calls go through a second
// session, as docs/changes.md tells clients: the server writes a session's
// notifications to the response of any call of that session in flight as
// well as to its stream, so they could arrive out of order.
func subscribe(ctx context.Context, ep *endpoint, token, uri, prefix string, l *feedLog) {
	updates := make(chan map[string]any, 4096)
	for ctx.Err() == nil {
		cs, err := sdkSession(ctx, ep.get(), token, updates)
		if err != nil {
			l.fail(err)
			retry(ctx)
			continue
		}
		calls, err := sdkSession(ctx, ep.get(), token, nil)
		if err != nil {
			l.fail(err)
			cs.Close()
			retry(ctx)
			continue
		}
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			l.fail(err)
			cs.Close()
			calls.Close()
			retry(ctx)
			continue
		}
		catchUp := func() error {
			for {
				page, err := pollChanges(ctx, calls, prefix, l.at(), 0)
				if err != nil {
					return err
				}
				l.mu.Lock()
				l.caughtUp += len(page.Changes)
				l.mu.Unlock()
				l.add(page.Changes, page.Cursor)
				if !page.More {
					return nil
				}
			}
		}
		err = catchUp()
		for err == nil && ctx.Err() == nil {
			select {
			case meta := <-updates:
				if meta["resync"] == true {
					err = catchUp()
					continue
				}
				rev := uint64(meta["revision"].(float64))
				if rev <= l.at() {
					continue
				}
				c := feedChange{Path: meta["path"].(string), Kind: meta["kind"].(string), Type: meta["type"].(string), Revision: rev, Size: int64(meta["size"].(float64))}
				c.SHA256, _ = meta["sha256"].(string)
				c.From, _ = meta["from"].(string)
				l.mu.Lock()
				l.pushed++
				l.mu.Unlock()
				l.add([]feedChange{c}, rev)
			case <-time.After(300 * time.Millisecond):
				// Quiet: is the server still there? A restarted one
				// forgot the subscription.
				_, err = calls.ListTools(ctx, nil)
			case <-ctx.Done():
			}
		}
		if err != nil {
			l.fail(err)
		}
		cs.Close()
		calls.Close()
		retry(ctx)
	}
}

// followSSE follows GET /changes until ctx ends, reconnecting with
// Last-Event-ID.
func followSSE(ctx context.Context, ep *endpoint, token, prefix string, l *feedLog) {
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(ep.get(), "/mcp")+"/changes?prefix="+prefix, nil)
		req.Header.Set("Last-Event-ID", strconv.FormatUint(l.at(), 10))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			l.fail(err)
			retry(ctx)
			continue
		}
		if res.StatusCode != http.StatusOK {
			l.fail(fmt.Errorf("GET /changes: %s", res.Status))
			res.Body.Close()
			retry(ctx)
			continue
		}
		sc := bufio.NewScanner(res.Body)
		var id, event, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "":
				n, _ := strconv.ParseUint(id, 10, 64)
				switch event {
				case "change":
					var c feedChange
					if err := json.Unmarshal([]byte(data), &c); err != nil || c.Revision != n {
						l.fail(fmt.Errorf("event %q id %s: %v", data, id, err))
					}
					l.add([]feedChange{c}, n)
				case "resync":
					l.mu.Lock()
					l.resyncs++
					l.mu.Unlock()
					l.add(nil, n)
				default:
					if id != "" {
						l.add(nil, n)
					}
				}
				id, event, data = "", "", ""
			}
		}
		res.Body.Close()
		retry(ctx)
	}
}

// waitCaughtUp waits until every log's cursor reaches rev.
func waitCaughtUp(t *testing.T, rev uint64, logs ...*feedLog) {
	t.Helper()
	waitFor(t, 60*time.Second, fmt.Sprintf("every reader at revision %d", rev), func() bool {
		for _, l := range logs {
			if l.at() < rev {
				return false
			}
		}
		return true
	})
}

// checkLog checks a reader got, in revision order and each once, exactly
// the files of want (path → revision) that visible allows, created, and
// nothing else but their directories.
func checkLog(t *testing.T, l *feedLog, want map[string]uint64, visible func(string) bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]int{}
	var prev uint64
	for i, c := range l.changes {
		if c.Revision <= prev {
			t.Errorf("%s: change %d (%s at %d) after revision %d: not in revision order", l.name, i, c.Path, c.Revision, prev)
		}
		prev = c.Revision
		if !visible(c.Path) {
			t.Errorf("%s: change %+v outside its prefix or grants", l.name, c)
		}
		seen[c.Path]++
		if c.Type == "directory" {
			continue
		}
		if rev, ok := want[c.Path]; !ok || c.Kind != "created" || c.Revision != rev || c.Size == 0 || len(c.SHA256) != 64 {
			t.Errorf("%s: change %+v; want the creation at %d", l.name, c, rev)
		}
	}
	n := 0
	for p, rev := range want {
		if !visible(p) {
			continue
		}
		n++
		if seen[p] != 1 {
			t.Errorf("%s: %s (revision %d) received %d times, want once", l.name, p, rev, seen[p])
		}
	}
	t.Logf("%s: %d changes, %d files of %d written, %d resyncs, %d pushed by notifications, %d read after a gap; reconnection errors: %q",
		l.name, len(l.changes), n, len(want), l.resyncs, l.pushed, l.caughtUp, l.errs)
	if l.refused != 0 {
		t.Errorf("%s: a cursor the depot gave was refused %d times", l.name, l.refused)
	}
	if l.resyncs != 0 {
		t.Errorf("%s: told to resync %d times, with every change kept", l.name, l.resyncs)
	}
}

// writeFiles writes n files of 8 bytes below dir, 50 a call, alternating
// between the subdirectories t1 and t2, and records their revisions.
func writeFiles(t *testing.T, call func(string, map[string]any) envelope, dir string, from, n int, want map[string]uint64) uint64 {
	t.Helper()
	var rev uint64
	for i := from; i < from+n; i += 50 {
		var files []any
		for j := i; j < min(i+50, from+n); j++ {
			files = append(files, map[string]any{"path": fmt.Sprintf("%s/t%d/f%04d", dir, 1+j%2, j), "content": fmt.Sprintf("file %04d", j)})
		}
		env := call("guide_cache_files", map[string]any{"files": files})
		if !env.Success {
			t.Fatalf("guide_cache_files: %+v", env.Error)
		}
		for _, f := range env.Data["files"].([]any) {
			f := f.(map[string]any)
			want[f["path"].(string)] = uint64(f["revision"].(float64))
		}
		rev = uint64(env.Data["revision"].(float64))
	}
	return rev
}

// feedSize is the changes each reader must receive: 1,000 by default, as
// the evidence asks; 5,000 with DEPOTFS_SOAK=1.
var feedSize = bySoak(1000, 5000)

// TestChangeFeedRestart: a long-poll client (Go SDK), a prefix subscriber
// (Go SDK, resources/subscribe to depot:///work/) and a Server-Sent Events
// reader each receive every one of 1,000 changes below /work, in revision
// order, exactly once, across a restart of the server in the middle; a
// second tenant, whose grants cover only /work/t1, following the whole
// depot, receives exactly the changes below /work/t1.
func TestChangeFeedRestart(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	writer, _ := issueToken(t, tokens, "writer", "*:/:rw")
	reader, _ := issueToken(t, tokens, "reader", "*:/:r")
	narrow, _ := issueToken(t, tokens, "narrow", "*:/work/t1:r")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tokens", tokens}, client: clientAuth{bearer: writer}})
	d.call("guide_cache_file", map[string]any{"path": "/elsewhere/before", "content": "outside the prefix"})
	var ep endpoint
	ep.set(d.url)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	poll := &feedLog{name: "long poll"}
	sub := &feedLog{name: "subscriber"}
	sse := &feedLog{name: "server-sent events"}
	tenant := &feedLog{name: "second tenant, long poll of /"}
	wg.Go(func() { longPoll(ctx, &ep, reader, "/work", poll) })
	wg.Go(func() { subscribe(ctx, &ep, reader, "depot:///work/", "/work", sub) })
	wg.Go(func() { followSSE(ctx, &ep, reader, "/work", sse) })
	wg.Go(func() { longPoll(ctx, &ep, narrow, "/", tenant) })

	want := map[string]uint64{}
	half := feedSize / 2
	rev := writeFiles(t, d.call, "/work", 0, 50, want)
	waitCaughtUp(t, rev, poll, sub, sse, tenant) // everyone is reading
	// The restart comes right after the last write of the first half, so
	// readers are still reading it: they resume from their cursors.
	writeFiles(t, d.call, "/work", 50, half-50, want)
	d = d.restart()
	ep.set(d.url)
	// A reader that starts after the restart from revision 0 reads the
	// first half from what the depot kept, not from the old process.
	late := &feedLog{name: "long poll from 0, begun after the restart"}
	wg.Go(func() { longPoll(ctx, &ep, reader, "/work", late) })
	d.call("guide_cache_file", map[string]any{"path": "/elsewhere/after", "content": "outside the prefix"})
	rev = writeFiles(t, d.call, "/work", half, feedSize-half, want)
	waitCaughtUp(t, rev, poll, sub, sse, tenant, late)
	cancel()
	wg.Wait()

	below := func(p string) bool { return p == "/work" || strings.HasPrefix(p, "/work/") }
	checkLog(t, poll, want, below)
	checkLog(t, late, want, below)
	checkLog(t, sub, want, below)
	checkLog(t, sse, want, below)
	checkLog(t, tenant, want, func(p string) bool { return p == "/work/t1" || strings.HasPrefix(p, "/work/t1/") })
}

// TestChangeFeedResync: a reader whose cursor is older than the changes
// the depot keeps (--feed-history) is told to resync, with the oldest
// revision kept, by every door; from that revision on it reads every
// change.
func TestChangeFeedResync(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--feed-history", "100"}})
	want := map[string]uint64{}
	rev := writeFiles(t, d.call, "/r", 0, 300, want)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdkSession(ctx, d.url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	page, err := pollChanges(ctx, cs, "/r", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !page.Resync || page.Oldest != rev-100 || page.Cursor != rev || len(page.Changes) != 0 {
		t.Fatalf("guide_changes since 1 with 100 changes kept at revision %d: %+v; want resync, oldest %d", rev, page, rev-100)
	}
	page, err = pollChanges(ctx, cs, "/r", page.Oldest, 0)
	if err != nil || page.Resync || len(page.Changes) != 100 || page.Changes[99].Revision != rev {
		t.Fatalf("guide_changes from the oldest kept: %+v, %v; want the last 100 changes", page, err)
	}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(d.url, "/mcp")+"/changes?since=5", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	var lines []string
	for sc.Scan() && sc.Text() != "" {
		lines = append(lines, sc.Text())
	}
	wantLines := fmt.Sprintf(`[id: %d event: resync data: {"cursor":%d,"oldest":%d,"revision":%d}]`, rev, rev, rev-100, rev)
	if fmt.Sprint(lines) != wantLines {
		t.Errorf("GET /changes?since=5: %q, want %s", lines, wantLines)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("timed out")
	}
}

// roam follows prefix with guide_changes, each call on the next of the
// endpoints: the cursor one host gave is good on every other.
func roam(ctx context.Context, eps []*endpoint, token, prefix string, l *feedLog) {
	for i := 0; ctx.Err() == nil; i++ {
		cs, err := sdkSession(ctx, eps[i%len(eps)].get(), token, nil)
		if err != nil {
			l.fail(err)
			retry(ctx)
			continue
		}
		page, err := pollChanges(ctx, cs, prefix, l.at(), 200)
		cs.Close()
		if err != nil {
			l.fail(err)
			retry(ctx)
			continue
		}
		if page.Resync {
			l.mu.Lock()
			l.resyncs++
			l.mu.Unlock()
		}
		l.add(page.Changes, page.Cursor)
	}
}

// TestChangeFeedSeveralHosts: on a NATS depot of three hosts, a long poll
// on host B, which is killed and restarted in the middle, a subscriber and
// a Server-Sent Events reader on host C, and a reader that asks a
// different host each call, each receive every one of 1,000 changes
// written through host A, in revision order, exactly once; a second
// tenant whose grants cover only /work/t1, following the whole depot on
// B, receives exactly the changes below /work/t1. Then, once the depot
// kept fewer changes than it made, every host tells a reader from
// revision 1 to resync, with the same oldest revision, from which it
// reads every change kept.
func TestChangeFeedSeveralHosts(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	writer, _ := issueToken(t, tokens, "writer", "*:/:rw")
	reader, _ := issueToken(t, tokens, "reader", "*:/:r")
	narrow, _ := issueToken(t, tokens, "narrow", "*:/work/t1:r")
	// Room for the changes of the first part, not for those after.
	history := feedSize + 100
	h := startHostsB(t, 0)
	for range 3 {
		h.all = append(h.all, startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: writer}, args: []string{
			"--store", h.cluster.URL(), "--nats-prefix", h.prefix, "--tokens", tokens, "--feed-history", strconv.Itoa(history)}}))
	}
	a, b, c := h.all[0], h.all[1], h.all[2]
	var epA, epB, epC endpoint
	epA.set(a.url)
	epB.set(b.url)
	epC.set(c.url)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	poll := &feedLog{name: "long poll on B"}
	sub := &feedLog{name: "subscriber on C"}
	sse := &feedLog{name: "server-sent events on C"}
	roaming := &feedLog{name: "long poll on A, B and C in turn"}
	tenant := &feedLog{name: "second tenant, long poll of / on B"}
	wg.Go(func() { longPoll(ctx, &epB, reader, "/work", poll) })
	wg.Go(func() { subscribe(ctx, &epC, reader, "depot:///work/", "/work", sub) })
	wg.Go(func() { followSSE(ctx, &epC, reader, "/work", sse) })
	wg.Go(func() { roam(ctx, []*endpoint{&epA, &epB, &epC}, reader, "/work", roaming) })
	wg.Go(func() { longPoll(ctx, &epB, narrow, "/", tenant) })

	want := map[string]uint64{}
	half := feedSize / 2
	rev := writeFiles(t, a.call, "/work", 0, 50, want)
	waitCaughtUp(t, rev, poll, sub, sse, roaming, tenant)
	writeFiles(t, a.call, "/work", 50, half-50, want)
	b.kill()
	b = startDaemon(t, b.cfg)
	epB.set(b.url)
	rev = writeFiles(t, a.call, "/work", half, feedSize-half, want)
	waitCaughtUp(t, rev, poll, sub, sse, roaming, tenant)
	cancel()
	wg.Wait()

	below := func(p string) bool { return p == "/work" || strings.HasPrefix(p, "/work/") }
	for _, l := range []*feedLog{poll, sub, sse, roaming} {
		checkLog(t, l, want, below)
	}
	checkLog(t, tenant, want, func(p string) bool { return p == "/work/t1" || strings.HasPrefix(p, "/work/t1/") })

	rev = writeFiles(t, a.call, "/later", 0, 200, map[string]uint64{})
	checkResyncEverywhere(t, []*daemon{a, b, c}, reader, rev, history)
}

// checkResyncEverywhere checks that every host, once at revision rev,
// tells guide_changes since 1 to resync, with the same oldest revision,
// and that from there a reader gets exactly the kept changes, history of
// them, up to rev.
func checkResyncEverywhere(t *testing.T, hs []*daemon, token string, rev uint64, history int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var oldest uint64
	for i, d := range hs {
		cs, err := sdkSession(ctx, d.url, token, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		var page feedPage
		waitFor(t, 30*time.Second, fmt.Sprintf("host %d at revision %d", i, rev), func() bool {
			page, err = pollChanges(ctx, cs, "/", 1, 0)
			return err == nil && page.Revision >= rev
		})
		if !page.Resync || page.Cursor != rev || page.Oldest == 0 || len(page.Changes) != 0 {
			t.Fatalf("host %d: guide_changes since 1 at revision %d with %d changes kept: %+v; want resync", i, rev, history, page)
		}
		if i > 0 && page.Oldest != oldest {
			t.Errorf("host %d: oldest revision kept %d, host 0 says %d", i, page.Oldest, oldest)
		}
		oldest = page.Oldest
		var got []feedChange
		for cursor := oldest; cursor < rev; {
			page, err = pollChanges(ctx, cs, "/", cursor, 0)
			if err != nil || page.Resync || page.Cursor <= cursor {
				t.Fatalf("host %d: guide_changes since %d: %+v, %v", i, cursor, page, err)
			}
			got = append(got, page.Changes...)
			cursor = page.Cursor
		}
		if len(got) != history || got[0].Revision <= oldest || got[len(got)-1].Revision != rev {
			t.Errorf("host %d: %d changes from the oldest kept (%d), revisions %d to %d; want %d up to %d",
				i, len(got), oldest, got[0].Revision, got[len(got)-1].Revision, history, rev)
		}
	}
}

// TestChangeFeedKinds: a creation, an update, a placeholder declared with
// guide_list_directory, a move (fs move) and a removal reach the long
// poll, a subscriber to the directory and a Server-Sent Events reader
// alike, each as its kind (created, updated, declared, moved from the old
// path, removed), with the revision, size and sha256 the change made.
func TestChangeFeedKinds(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: allProfiles})
	var ep endpoint
	ep.set(d.url)
	start := uint64(d.call("guide_changes", map[string]any{}).Data["cursor"].(float64))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	poll := &feedLog{name: "long poll", cursor: start}
	sub := &feedLog{name: "subscriber", cursor: start}
	sse := &feedLog{name: "server-sent events", cursor: start}
	wg.Go(func() { longPoll(ctx, &ep, "", "/k", poll) })
	wg.Go(func() { subscribe(ctx, &ep, "", "depot:///k", "/k", sub) })
	wg.Go(func() { followSSE(ctx, &ep, "", "/k", sse) })

	fs := fsClient{d.client}
	must := func(tool string, args map[string]any) {
		t.Helper()
		if tool == "move" || tool == "delete" {
			if err := fs.call(tool, args, nil); err != nil {
				t.Fatalf("%s %v: %v", tool, args, err)
			}
			return
		}
		if env := d.call(tool, args); !env.Success {
			t.Fatalf("%s %v: %+v", tool, args, env.Error)
		}
	}
	must("guide_cache_file", map[string]any{"path": "/k/a", "content": "one"})
	must("guide_cache_file", map[string]any{"path": "/k/a", "content": "two!"})
	must("guide_list_directory", map[string]any{"path": "/k", "entries": []any{
		map[string]any{"name": "p.txt", "type": "file", "size": 5}}})
	must("move", map[string]any{"source": "k/a", "destination": "k/b"})
	must("delete", map[string]any{"path": "k/b"})
	rev := uint64(d.call("guide_changes", map[string]any{}).Data["cursor"].(float64))
	waitCaughtUp(t, rev, poll, sub, sse)
	cancel()
	wg.Wait()

	sum := func(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }
	want := []string{
		"created /k directory 0 ",
		"created /k/a file 3 " + sum("one"),
		"updated /k/a file 4 " + sum("two!"),
		"updated /k directory 0 ", // the listing declares the directory too
		"declared /k/p.txt file 5 ",
		"moved /k/b from /k/a file 4 " + sum("two!"),
		"removed /k/a file 4 " + sum("two!"),
		"removed /k/b file 4 " + sum("two!"),
	}
	var revs []uint64
	for _, l := range []*feedLog{poll, sub, sse} {
		var got []string
		var at []uint64
		for _, c := range l.changes {
			from := ""
			if c.From != "" {
				from = "from " + c.From + " "
			}
			got = append(got, fmt.Sprintf("%s %s %s%s %d %s", c.Kind, c.Path, from, c.Type, c.Size, c.SHA256))
			at = append(at, c.Revision)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s received:\n%s\nwant:\n%s", l.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !slices.IsSorted(at) || len(at) == 0 || at[0] <= start || at[len(at)-1] != rev || len(slices.Compact(slices.Clone(at))) != len(at) {
			t.Errorf("%s: revisions %v, want increasing from after %d to %d", l.name, at, start, rev)
		}
		if revs != nil && !slices.Equal(at, revs) {
			t.Errorf("%s: revisions %v, the long poll's %v", l.name, at, revs)
		}
		revs = at
	}
}
