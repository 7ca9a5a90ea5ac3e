//lint:file-ignore SA1019 the session-based protocol era (resources/subscribe, the GET stream) is deprecated in mcp-go but still served, and tested here on purpose.

package integration_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// resourceURI is the URI depotfs gives a depot path, written out here from
// docs/resources.md's rule so the test does not share depotfs's code: every byte
// but A-Z a-z 0-9 - . _ ~ and "/" percent-encoded.
func resourceURI(p string) string {
	var b strings.Builder
	b.WriteString("depot://")
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '/' || c == '-' || c == '.' || c == '_' || c == '~' ||
			'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// notifications collects the notifications a client receives.
type notifications struct {
	t  testing.TB
	ch chan mcp.JSONRPCNotification
}

func collect(t testing.TB, c *client.Client) *notifications {
	n := &notifications{t: t, ch: make(chan mcp.JSONRPCNotification, 64)}
	c.OnNotification(func(note mcp.JSONRPCNotification) {
		select {
		case n.ch <- note:
		default:
			t.Errorf("notification queue full; dropped %s", note.Method)
		}
	})
	return n
}

// next returns the next notification of method, skipping others.
func (n *notifications) next(method string) mcp.JSONRPCNotification {
	n.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case note := <-n.ch:
			if note.Method == method {
				return note
			}
		case <-deadline:
			n.t.Fatalf("no %s notification within 20s", method)
		}
	}
}

// updated returns the URI of the next resources/updated notification.
func (n *notifications) updated() string {
	n.t.Helper()
	uri, _ := n.next(mcp.MethodNotificationResourceUpdated).Params.AdditionalFields["uri"].(string)
	return uri
}

// pushAll stores files (path → content) with guide_cache_file, four calls
// at a time.
func pushAll(t *testing.T, d *daemon, files map[string][]byte) {
	t.Helper()
	type job struct {
		path string
		data []byte
	}
	jobs := make(chan job)
	errs := make(chan error, len(files))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for j := range jobs {
				env, err := d.tryCall("guide_cache_file", map[string]any{
					"path": j.path, "content": base64.StdEncoding.EncodeToString(j.data), "encoding": "base64",
				})
				if err == nil && !env.Success {
					err = fmt.Errorf("%s: %+v", j.path, env.Error)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	for p, data := range files {
		jobs <- job{p, data}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestResources pushes 500 files and a few special ones through the real
// binary over HTTP, then lists them as resources page by page, reads text
// and binary files, and subscribes on both protocol eras: each subscriber
// is notified when the file is updated. Finally SIGTERM, with both kinds of
// notification stream still open, stops depotfs promptly.
func TestResources(t *testing.T) {
	t.Parallel()
	// 500 files pushed as fast as possible: no rate limit.
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-calls", "0"}})
	files := map[string][]byte{}
	for i := range 500 {
		files[fmt.Sprintf("/res/d%02d/f%03d.txt", i%10, i)] = fmt.Appendf(nil, "file %d\n", i)
	}
	binary := pseudoRandom(3000, 5)
	binary[0] = 0 // a NUL byte: binary whatever the sniffer thinks of the rest
	files["/res/bin/data.bin"] = binary
	files["/res/text/notes é.md"] = []byte("# notes\n\nünïcödé text\n")
	pushAll(t, d, files)

	// resources/list, page by page.
	var listed []string
	pages := 0
	var cursor mcp.Cursor
	for {
		req := mcp.ListResourcesRequest{}
		req.Params.Cursor = cursor
		res, err := d.client.ListResourcesByPage(context.Background(), req)
		if err != nil {
			t.Fatalf("resources/list page %d: %v", pages+1, err)
		}
		pages++
		for _, r := range res.Resources {
			if r.URI == "depotfs://pending-requests" {
				// Listed after the files: the requests for content.
				continue
			}
			if r.URI != resourceURI(r.Name) {
				t.Errorf("resource %s has URI %s, want %s", r.Name, r.URI, resourceURI(r.Name))
			}
			if r.Size == nil || *r.Size != int64(len(files[r.Name])) {
				t.Errorf("resource %s: size %v, want %d", r.Name, r.Size, len(files[r.Name]))
			}
			listed = append(listed, r.Name)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	want := make([]string, 0, len(files))
	for p := range files {
		want = append(want, p)
	}
	slices.SortFunc(want, func(a, b string) int { return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/")) })
	if !slices.Equal(listed, want) {
		t.Fatalf("resources/list gave %d resources in %d pages; want the %d files in depth-first order\ngot  %q...\nwant %q...",
			len(listed), pages, len(want), listed[:min(5, len(listed))], want[:5])
	}
	if wantPages := (len(want) + 99) / 100; pages != wantPages {
		t.Errorf("%d pages of the default size 100 for %d files, want %d", pages, len(want), wantPages)
	}

	// resources/read: text and binary, byte for byte.
	for _, tc := range []struct {
		path, mime string
		text       bool
	}{
		{"/res/d03/f123.txt", "text/plain", true},
		{"/res/text/notes é.md", "text/markdown", true},
		{"/res/bin/data.bin", "application/octet-stream", false},
	} {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = resourceURI(tc.path)
		res, err := d.client.ReadResource(context.Background(), req)
		if err != nil {
			t.Fatalf("resources/read %s: %v", tc.path, err)
		}
		var got []byte
		var mime string
		switch c := res.Contents[0].(type) {
		case mcp.TextResourceContents:
			got, mime = []byte(c.Text), c.MIMEType
			if !tc.text {
				t.Errorf("%s read as text", tc.path)
			}
		case mcp.BlobResourceContents:
			mime = c.MIMEType
			if got, err = base64.StdEncoding.DecodeString(c.Blob); err != nil {
				t.Fatalf("%s: blob: %v", tc.path, err)
			}
			if tc.text {
				t.Errorf("%s read as a blob", tc.path)
			}
		}
		if !bytes.Equal(got, files[tc.path]) || mime != tc.mime {
			t.Errorf("%s: read %d bytes of %s, want the %d pushed bytes of %s", tc.path, len(got), mime, len(files[tc.path]), tc.mime)
		}
	}

	// Subscriptions: the stateless era on the daemon's own client, the
	// session-based era on a second client with the session's GET stream.
	watched := "/res/d07/f007.txt"
	uri := resourceURI(watched)
	if v := d.client.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("the daemon's client speaks %s, want the stateless 2026-07-28", v)
	}
	stateless := collect(t, d.client)
	subscribe := mcp.SubscribeRequest{}
	subscribe.Params.URI = uri
	if err := d.client.Subscribe(context.Background(), subscribe); err != nil {
		t.Fatal(err)
	}
	stopListen, err := d.client.ListenAsync(context.Background(), d.client.PendingSubscriptionFilter(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stopListen()
	stateless.next(mcp.MethodNotificationSubscriptionsAcknowledged)

	tr, err := transport.NewStreamableHTTP(d.url, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	sc := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	session := collect(t, sc)
	if err := sc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "depotfs-integration-session", Version: "1"}
	if _, err := sc.Initialize(context.Background(), init); err != nil {
		t.Fatal(err)
	}
	if err := sc.Subscribe(context.Background(), subscribe); err != nil {
		t.Fatal(err)
	}

	d.mustCall("guide_cache_file", map[string]any{"path": watched, "content": "new content\n"})
	for era, n := range map[string]*notifications{"stateless": stateless, "session": session} {
		if got := n.updated(); got != uri {
			t.Errorf("%s subscriber notified for %s, want %s", era, got, uri)
		}
	}
	if got := runProgram(t, "cat", d.path(watched)); got != "new content\n" {
		t.Errorf("the mount shows %q after the update", got)
	}

	// Shutdown with both streams open.
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !d.waitExit(10 * time.Second) {
		t.Fatalf("depotfs did not exit within 10s of SIGTERM with notification streams open\n%s", tail(d.logs.String(), 20))
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("depotfs exited with %d after SIGTERM\n%s", code, tail(d.logs.String(), 20))
	}
	t.Logf("SIGTERM to exit with two open notification streams: %v", time.Since(start).Round(time.Millisecond))
}
