package mcpserver_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestTransports runs the core scenarios over every transport: a text file,
// a binary file with every byte value, a filename-only upload, a chunked
// upload out of order with a retried chunk, a listing and a refused call.
func TestTransports(t *testing.T) {
	for _, kind := range []string{"http", "stdio", "inprocess"} {
		t.Run(kind, func(t *testing.T) {
			h := newHarnessOver(t, nil, kind)

			var d fileReply
			h.ok("guide_cache_file", m{"path": "/t/hello.txt", "content": "hello\n"}, &d)
			if d.Status != "created" || string(h.read("/t/hello.txt")) != "hello\n" {
				t.Errorf("text file: %+v", d)
			}

			all := make([]byte, 256)
			for i := range all {
				all[i] = byte(i)
			}
			h.ok("guide_cache_file", m{"path": "/t/all.bin", "content": base64.StdEncoding.EncodeToString(all), "encoding": "base64", "sha256": sum(all)}, &d)
			if string(h.read("/t/all.bin")) != string(all) {
				t.Error("binary file differs")
			}

			h.ok("guide_cache_file", m{"filename": "upload.txt", "content": "u"}, &d)
			if d.Path != "/uploads/"+sum([]byte("u"))[:16]+"/upload.txt" {
				t.Errorf("filename-only upload at %q", d.Path)
			}

			data := []byte(strings.Repeat("chunky bytes ", 1000))
			parts := chunks(data, 4)
			for _, i := range []int{2, 0, 0, 3, 1} {
				h.ok("guide_read_file", m{"path": "/t/chunked", "upload_id": "c1", "chunk_index": i, "chunk_count": 4,
					"content": base64.StdEncoding.EncodeToString(parts[i]), "encoding": "base64", "sha256": sum(data)}, &d)
			}
			if !d.Upload.Complete || sum(h.read("/t/chunked")) != sum(data) {
				t.Errorf("chunked upload: %+v", d.Upload)
			}

			var l listReply
			h.ok("guide_list_directory", m{"path": "/t/listed", "entries": []any{m{"name": "a", "type": "file", "size": 3}}}, &l)
			if l.Created != 2 {
				t.Errorf("listing: %+v", l)
			}

			rev := h.revision()
			h.fail("guide_cache_file", m{"path": "../escape", "content": "x"}, "security")
			if h.revision() != rev {
				t.Error("a refused call changed the store")
			}

			e, _ := h.stat("/t/hello.txt")
			switch kind {
			case "http":
				if e.Writer != "http:127.0.0.1" {
					t.Errorf("writer %q, want http:<remote host>", e.Writer)
				}
			case "stdio":
				if want := identity.Stdio().String(); e.Writer != want {
					t.Errorf("writer %q, want %q", e.Writer, want)
				}
			case "inprocess":
				if e.Writer != tester.String() {
					t.Errorf("writer %q, want the harness's identity %q", e.Writer, tester)
				}
			}
		})
	}
}

func TestHTTPRequestLimit(t *testing.T) {
	h := newHarnessOver(t, &mcpserver.Options{MaxRequestBytes: 4096, Settings: mcpserver.Settings{MountPoint: testMount}}, "http")
	rev := h.revision()
	req := mcp.CallToolRequest{}
	req.Params.Name = "guide_cache_file"
	req.Params.Arguments = m{"path": "/too/big", "content": strings.Repeat("x", 8192)}
	res, err := h.client.CallTool(context.Background(), req)
	if err == nil && !res.IsError {
		t.Fatal("a request over MaxRequestBytes succeeded")
	}
	if _, ok := h.stat("/too/big"); ok || h.revision() != rev {
		t.Fatal("a request over MaxRequestBytes changed the store")
	}
}

// TestHTTPShutdownFinishesCalls shuts the HTTP server down while a call is
// in flight: the call completes and replies, and Shutdown returns without
// waiting for its deadline, although the client still has its session.
func TestHTTPShutdownFinishesCalls(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	entered, release := make(chan struct{}), make(chan struct{})
	srv := mcpserver.New(st, &mcpserver.Options{
		Settings: mcpserver.Settings{MountPoint: testMount, Applied: func(ctx context.Context, rev uint64) error {
			close(entered)
			<-release
			return nil
		}},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	c, err := client.NewStreamableHttpClient("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	startClient(t, c)
	schemas := newReplySchemas(srv)

	replied := make(chan envelope, 1)
	go func() {
		replied <- checkedCall(t, context.Background(), c, schemas, "guide_cache_file", m{"path": "/inflight", "content": "x"})
	}()
	<-entered
	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shutdown <- hs.Shutdown(ctx)
	}()
	close(release)
	if env := <-replied; !env.Success {
		t.Fatalf("the in-flight call failed: %+v", env.Error)
	}
	if err := <-shutdown; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := st.Stat(context.Background(), "/inflight"); err != nil {
		t.Fatalf("the in-flight write is missing: %v", err)
	}
}

func TestServeStdioCancel(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := mcpserver.New(st, nil)
	ctx, cancel := context.WithCancel(context.Background())
	in, inW := pipe(t)
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, in, discard{}) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ServeStdio after cancel: %v", err)
	}
	inW.Close() // releases mcp-go's reader goroutine
}

func TestServeStdioBusy(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := mcpserver.New(st, nil)
	h := newHarnessOver(t, nil, "stdio") // a first stdio transport, running
	h.ok("guide_cache_file", m{"path": "/x", "content": "x"}, nil)
	in, inW := pipe(t)
	defer inW.Close()
	if err := srv.ServeStdio(context.Background(), in, discard{}); !errors.Is(err, mcpserver.ErrStdioBusy) {
		t.Fatalf("second ServeStdio: %v, want ErrStdioBusy", err)
	}
}
