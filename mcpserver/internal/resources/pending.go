package resources

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver/internal/pending"
)

// PendingResource is the resource listing the pending requests.
func (s *Resources) PendingResource() server.ServerResource {
	return server.ServerResource{
		Resource: mcp.NewResource(pending.URI, "Pending file requests",
			mcp.WithResourceDescription("The files programs on the host are waiting for, as guide_pending_requests lists them (JSON). Subscribe to be notified when the list changes; answer a request with guide_cache_file or guide_read_file at its path."),
			mcp.WithMIMEType("application/json"),
		),
		Handler: func(ctx context.Context, _ mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			who, _ := identity.FromContext(ctx)
			text, err := json.Marshal(s.pending.Current(func(p string) bool { return s.rt.MayWrite(who, p) }))
			if err != nil {
				return nil, fmt.Errorf("encode %s: %w", pending.URI, err)
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: pending.URI, MIMEType: "application/json", Text: string(text)}}, nil
		},
	}
}

// PendingChanged tells every client subscribed to the pending-requests
// resource that it changed. It is the broker's Notify callback: it never
// blocks (a notification for a session whose queue is full is dropped).
func (s *Resources) PendingChanged() {
	for _, t := range s.subs.to(pending.URI) {
		s.notifyUpdated(t, nil)
	}
}
