package mcpserver

import (
	"context"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// subscribers tracks the clients subscribed to the pending-requests
// resource, in both ways MCP has for it. mcp-go acknowledges both but
// leaves the tracking to the server; these hooks do it. Safe for
// concurrent use.
//
//   - Up to protocol version 2025-11-25 a client sends resources/subscribe
//     and gets notifications on its session, addressed by session ID.
//   - From 2026-07-28 a client holds a subscriptions/listen request open
//     with the resource in its filter; notifications go on that request's
//     stream, tagged with its request ID, for as long as it lasts.
type subscribers struct {
	mu        sync.Mutex
	sessions  map[string]struct{} // legacy subscribers, by session ID
	listeners map[*listener]struct{}
}

// listener is one subscriptions/listen stream that asked for pendingURI.
type listener struct {
	session server.ClientSession
	id      any             // the listen request's JSON-RPC ID
	done    <-chan struct{} // closed when the stream ends
}

func newSubscribers() *subscribers {
	return &subscribers{sessions: map[string]struct{}{}, listeners: map[*listener]struct{}{}}
}

// hooks records subscriptions to pendingURI and forgets them when they end.
func (u *subscribers) hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil && req.Params.URI == pendingURI {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.sessions[sess.SessionID()] = struct{}{}
		}
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil && req.Params.URI == pendingURI {
			u.remove(sess.SessionID())
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, sess server.ClientSession) {
		u.remove(sess.SessionID())
	})
	h.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
		sess := server.ClientSessionFromContext(ctx)
		if sess == nil || id == nil || !slices.Contains(req.Params.Notifications.ResourceSubscriptions, pendingURI) {
			return
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		u.listeners[&listener{session: sess, id: id, done: ctx.Done()}] = struct{}{}
	})
	return h
}

// remove forgets a legacy subscriber.
func (u *subscribers) remove(sessionID string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.sessions, sessionID)
}

// list returns the legacy subscribers' session IDs, sorted, and the
// listeners whose streams are still open (forgetting the others).
func (u *subscribers) list() ([]string, []*listener) {
	u.mu.Lock()
	defer u.mu.Unlock()
	ids := make([]string, 0, len(u.sessions))
	for id := range u.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var open []*listener
	for l := range u.listeners {
		select {
		case <-l.done:
			delete(u.listeners, l)
		default:
			open = append(open, l)
		}
	}
	return ids, open
}

// notify queues a notification on a listener's stream, tagged with its
// subscription ID, without blocking: it reports false when the session's
// queue is full and the notification was dropped.
func (l *listener) notify(method string, params map[string]any) bool {
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: method,
			Params: mcp.NotificationParams{
				Meta:             map[string]any{mcp.MetaKeySubscriptionID: l.id},
				AdditionalFields: params,
			},
		},
	}
	select {
	case l.session.NotificationChannel() <- n:
		return true
	default:
		return false
	}
}
