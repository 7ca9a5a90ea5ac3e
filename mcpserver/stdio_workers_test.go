package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/fetch"
)

// A stdio client's call is served while eight of its earlier calls are
// still running (long polls of guide_pending_requests): mcp-go's default
// pool of 5 workers would queue it behind them until one ended. The
// requests are written to the pipe in order, so the polls are taken first.
func TestStdioCallNotQueuedBehindRunningOnes(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	broker := fetch.New(st, &fetch.Options{Timeout: time.Minute})
	t.Cleanup(func() { broker.Close() })
	srv := mcpserver.New(st, &mcpserver.Options{Requests: broker, Settings: mcpserver.Settings{MountPoint: testMount, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	in, toServer := io.Pipe()
	fromServer, out := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := srv.ServeStdio(context.Background(), in, out)
		in.CloseWithError(fmt.Errorf("ServeStdio returned: %v", err)) // a send fails, not hangs
		done <- err
	}()
	t.Cleanup(func() {
		srv.Close() // ends the long polls at once
		toServer.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		out.Close()
	})

	replies := make(chan map[string]any, 32)
	go func() {
		sc := bufio.NewScanner(fromServer)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var msg map[string]any
			if json.Unmarshal(sc.Bytes(), &msg) == nil && msg["id"] != nil {
				replies <- msg
			}
		}
	}()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(toServer, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	reply := func() map[string]any {
		t.Helper()
		select {
		case msg := <-replies:
			return msg
		case <-time.After(20 * time.Second):
			t.Fatal("no reply within 20 s")
			return nil
		}
	}
	call := func(id int, tool, args string) {
		t.Helper()
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
	}

	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	reply()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call(1, "guide_pending_requests", `{}`)
	var first struct {
		StructuredContent struct {
			Data struct {
				Cursor string `json:"cursor"`
			} `json:"data"`
		} `json:"structuredContent"`
	}
	raw, _ := json.Marshal(reply()["result"])
	if err := json.Unmarshal(raw, &first); err != nil || first.StructuredContent.Data.Cursor == "" {
		t.Fatalf("guide_pending_requests: %s", raw)
	}
	for id := 2; id < 10; id++ {
		call(id, "guide_pending_requests", fmt.Sprintf(`{"wait_seconds":60,"cursor":%q}`, first.StructuredContent.Data.Cursor))
	}
	call(10, "guide_cache_file", `{"path":"/after/polls.txt","content":"x"}`)
	if got := reply(); got["id"] != float64(10) {
		t.Fatalf("first reply after the polls: %v, want the write's (id 10)", got)
	}
}
