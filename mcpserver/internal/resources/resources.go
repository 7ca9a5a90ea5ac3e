// Package resources serves the depot's files as MCP resources: listing
// them in pages (list.go), reading one (read.go, audited like a tool call),
// their URIs (uri.go) and media types (mime.go), subscriptions and the
// watcher that notifies subscribers (subscriptions.go), and the
// pending-requests resource (pending.go). It reaches the store only
// through the caller's tool.View and the server's tool.Runtime.WatchAll.
package resources

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/feed"
	"github.com/depotfs/depotfs/mcpserver/internal/outbox"
	"github.com/depotfs/depotfs/mcpserver/internal/pending"
	"github.com/depotfs/depotfs/mcpserver/internal/rpcerr"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// Resources serves the depot's files and the pending-requests list as
// resources. It is safe for concurrent use once New returns.
type Resources struct {
	rt      *tool.Runtime
	env     *tool.Env
	pending *pending.List
	subs    *subscriptions // resource subscriptions, files and the pending-requests list
	streams *outbox.Registry
	log     *slog.Logger
}

// New returns the resources over rt's store, paged and bounded by env's
// ResourcePageSize, MaxResourceBytes and MaxSubscriptions. A session's
// notifications go to its GET stream in streams while one is open.
func New(rt *tool.Runtime, env *tool.Env, p *pending.List, streams *outbox.Registry) *Resources {
	return &Resources{rt: rt, env: env, pending: p, subs: newSubscriptions(env.MaxSubscriptions), streams: streams, log: env.Logger}
}

// Hooks adds to hooks what serves the depot's files (and the
// pending-requests list) as resources: listing files, validating resource
// requests and tracking subscriptions. New declares the capability
// (subscriptions, no list_changed: every push would trigger one). A failed
// resources/read gets the error ReadError gives it, through the
// rpcerr.Fixes the transports put in the request's context.
func (s *Resources) Hooks(hooks *server.Hooks) {
	hooks.AddOnRequestInitialization(s.checkRequest)
	hooks.AddAfterListResources(s.listResources)
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		s.subscribe(ctx, req.Params.URI)
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if session := server.ClientSessionFromContext(ctx); session != nil {
			s.subs.remove(session, req.Params.URI)
		}
	})
	hooks.AddBeforeSubscriptionsListen(s.listen)
	hooks.AddAfterSubscriptionsListen(func(ctx context.Context, id any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		s.unlisten(ctx, id)
	})
	hooks.AddOnError(func(ctx context.Context, id any, method mcp.MCPMethod, message any, err error) {
		switch method {
		case mcp.MethodSubscriptionsListen:
			s.unlisten(ctx, id)
		case mcp.MethodResourcesRead:
			if req, ok := message.(*mcp.ReadResourceRequest); ok {
				if details, ok := ReadError(req.Params.URI, err); ok {
					rpcerr.Set(ctx, id, details)
				}
			}
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, session server.ClientSession) {
		s.subs.drop(session)
	})
}

// Template is the one template that addresses every depot file.
func (s *Resources) Template() server.ServerResourceTemplate {
	return server.ServerResourceTemplate{
		Template: mcp.NewResourceTemplate(URITemplate, "depot-file",
			mcp.WithTemplateTitle("A file in the depot"),
			mcp.WithTemplateDescription("Any file in the depot, by its path: depot:/// followed by the path without its leading slash, "+
				"percent-encoded (RFC 3986; non-ASCII as UTF-8 bytes), e.g. depot:///workspace/app/main.go. "+
				"Text files are returned as text, other files as base64 blobs, each with its media type. "+
				"Subscribe to a URI to be notified when that file is created, updated or removed."),
		),
		Handler: s.readResource,
	}
}

// checkRequest refuses resource requests depotfs cannot serve before
// mcp-go handles them, so the client gets a clear error rather than an
// empty success: a cursor depotfs did not write, a URI that is not a depot
// resource, a subscription without a session or over the limit. mcp-go
// sends the error as JSON-RPC "invalid request" (-32600) with its text.
// Other messages pass untouched; a malformed one is left to mcp-go.
func (s *Resources) checkRequest(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok || !bytes.Contains(raw, []byte(`"resources/`)) && !bytes.Contains(raw, []byte(`"subscriptions/listen"`)) {
		return nil
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			URI           *string `json:"uri"`
			Cursor        string  `json:"cursor"`
			Notifications struct {
				ResourceSubscriptions []string `json:"resourceSubscriptions"`
			} `json:"notifications"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil {
		return nil
	}
	switch mcp.MCPMethod(req.Method) {
	case mcp.MethodResourcesList:
		if req.Params.Cursor != "" {
			_, err := decodeCursor(req.Params.Cursor)
			return err
		}
	case mcp.MethodResourcesSubscribe, mcp.MethodSubscriptionsListen:
		uris := req.Params.Notifications.ResourceSubscriptions
		if req.Method == string(mcp.MethodResourcesSubscribe) {
			if session := server.ClientSessionFromContext(ctx); session == nil || session.SessionID() == "" || req.Params.URI == nil {
				// 2026-07-28 removed resources/subscribe: without a
				// session mcp-go answers 404 with method not found, as
				// the transport requires.
				return nil
			}
			uris = []string{*req.Params.URI}
		}
		for _, uri := range uris {
			if err := s.maySubscribe(ctx, uri); err != nil {
				return fmt.Errorf("%s: %w", req.Method, err)
			}
		}
		return s.subs.room(len(uris))
	}
	return nil
}

// subscriptionPath returns the key a subscription to uri is recorded
// under: the clean depot path of a file resource, or pending.URI itself for
// the pending-requests resource (never a depot path, which starts with
// "/", so store events never match it).
func subscriptionPath(uri string) (string, error) {
	if uri == pending.URI {
		return pending.URI, nil
	}
	return ParseURI(uri)
}

// maySubscribe refuses a subscription to uri that is not a resource, or
// names a file or directory at or below which the caller in ctx may read
// nothing (a subscriber learns when a file changes, which is reading it;
// a subscriber to a directory hears only of the paths it may read).
func (s *Resources) maySubscribe(ctx context.Context, uri string) error {
	p, err := subscriptionPath(uri)
	if err != nil || p == pending.URI {
		return err
	}
	return feed.CheckPrefix(s.rt.View(ctx).Perms(), "resources", p)
}

// subscribe records a resources/subscribe of the session in ctx, which
// lasts until resources/unsubscribe or the end of the session.
func (s *Resources) subscribe(ctx context.Context, uri string) {
	if session := server.ClientSessionFromContext(ctx); session != nil {
		s.record(ctx, session, sub{session: session}, uri)
	}
}

// record records that owner, notified as sb says, subscribed to uri; a
// failure is logged. sb's perms are the caller's in ctx.
func (s *Resources) record(ctx context.Context, owner any, sb sub, uri string) {
	p, err := subscriptionPath(uri)
	if err == nil {
		sb.perms = s.rt.View(ctx).Perms()
		err = s.subs.add(owner, sb, uri, p)
	}
	if err != nil {
		s.log.Warn("mcp resource subscription not recorded", "uri", uri, "err", err)
	}
}

// listen records the resource subscriptions of a subscriptions/listen
// request, which last as long as the request. They end in unlisten, called
// by the hooks that run when the request returns (before its response is
// sent, so a client that replaces one listen with another is never notified
// for the old one), and, as a safety net, when mcp-go cancels the request's
// context. Over HTTP their notifications go to the request's own stream
// (outbox.FromContext), in order.
func (s *Resources) listen(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
	session := server.ClientSessionFromContext(ctx)
	if session == nil {
		return
	}
	owner := listenKey(session, id)
	context.AfterFunc(ctx, func() { s.subs.drop(owner) })
	sb := sub{session: session, listenID: id, out: outbox.FromContext(ctx)}
	for _, uri := range req.Params.Notifications.ResourceSubscriptions {
		s.record(ctx, owner, sb, uri)
	}
}

// unlisten ends the subscriptions of the subscriptions/listen request id.
func (s *Resources) unlisten(ctx context.Context, id any) {
	if session := server.ClientSessionFromContext(ctx); session != nil {
		s.subs.drop(listenKey(session, id))
	}
}
