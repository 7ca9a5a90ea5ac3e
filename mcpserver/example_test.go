package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store/bolt"
)

// An agent hands over a file it has no path for; the reply says where a
// path-only program on the host can read it.
func Example() {
	dir, err := os.MkdirTemp("", "depotfs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := bolt.Open(filepath.Join(dir, "depot.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	srv := mcpserver.New(st, &mcpserver.Options{
		Settings: mcpserver.Settings{MountPoint: "/mnt/depot", Logger: slog.New(slog.DiscardHandler)},
	})
	// An in-process client has no transport to vouch for it: its calls
	// carry the identity in their context, here a local user with full
	// grants. Without one a call may use nothing.
	ctx := identity.NewContext(context.Background(), identity.Identity{Transport: "inprocess", Subject: "example", Full: true})
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		log.Fatal(err)
	}

	req := mcp.CallToolRequest{}
	req.Params.Name = "guide_cache_file"
	req.Params.Arguments = map[string]any{"filename": "report.txt", "content": "quarterly numbers\n"}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	var reply struct {
		Success bool
		Data    struct {
			Status    string
			MountPath string `json:"mount_path"`
		}
	}
	if err := json.Unmarshal(res.RawStructuredContent, &reply); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.Success, reply.Data.Status, reply.Data.MountPath)
	// Output: true created /mnt/depot/uploads/4c694ad7a5ea2761/report.txt
}

// The HTTP transport mounted at /mcp, shut down gracefully: Close ends the
// notification streams, so Shutdown waits only for the calls in flight.
func ExampleServer_Handler() {
	st, err := bolt.Open("/var/lib/depotfs/depot.db", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	srv := mcpserver.New(st, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: "/mnt/depot"}})

	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	hs := &http.Server{Addr: "127.0.0.1:8765", Handler: mux}
	go func() {
		if err := hs.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			log.Fatal(err)
		}
	}()
	// ... on SIGTERM:
	srv.Close()
	if err := hs.Shutdown(context.Background()); err != nil {
		log.Print(err)
	}
}
