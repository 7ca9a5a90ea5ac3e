package resources

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// errTooManySubscriptions reports a subscription over
// Options.MaxSubscriptions.
var errTooManySubscriptions = errors.New("too many resource subscriptions")

// subKey is one subscription: who holds it and the URI as the client wrote
// it, which is the URI its notifications carry.
type subKey struct {
	owner any // the session (resources/subscribe) or a listener (subscriptions/listen)
	uri   string
}

// listener owns the subscriptions of one subscriptions/listen request: its
// session and its JSON-RPC id. They end with the request, independently of
// other listens of the same session (a stdio client may replace one listen
// with another).
type listener struct {
	session server.ClientSession
	id      string
}

// listenKey returns the owner of the subscriptions of the listen request
// id (a JSON string or number) on session.
func listenKey(session server.ClientSession, id any) listener {
	return listener{session, fmt.Sprint(id)}
}

// subscriptions records which clients subscribed to which resources. It is
// safe for concurrent use: subscribe requests add and remove entries while
// the store watcher looks them up.
type subscriptions struct {
	max int

	mu      sync.Mutex
	byPath  map[string]map[subKey]server.ClientSession // clean path → subscription → session to notify
	byOwner map[any]map[string]string                  // owner → URI → clean path
	count   int
	dropped map[server.ClientSession]bool // sessions whose full queue was logged
}

func newSubscriptions(max int) *subscriptions {
	return &subscriptions{
		max:     max,
		byPath:  map[string]map[subKey]server.ClientSession{},
		byOwner: map[any]map[string]string{},
		dropped: map[server.ClientSession]bool{},
	}
}

// room reports an error if n more subscriptions would exceed the limit.
func (r *subscriptions) room(n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count+n > r.max {
		return fmt.Errorf("%w: the server holds %d of at most %d; unsubscribe from resources you no longer need", errTooManySubscriptions, r.count, r.max)
	}
	return nil
}

// add records that owner, notified through session, subscribed to uri,
// which names the clean path p. Subscribing twice is one subscription.
func (r *subscriptions) add(owner any, session server.ClientSession, uri, p string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	uris := r.byOwner[owner]
	if _, ok := uris[uri]; ok {
		return nil
	}
	if r.count >= r.max {
		return fmt.Errorf("%w: the server holds %d of at most %d", errTooManySubscriptions, r.count, r.max)
	}
	if uris == nil {
		uris = map[string]string{}
		r.byOwner[owner] = uris
	}
	uris[uri] = p
	subs := r.byPath[p]
	if subs == nil {
		subs = map[subKey]server.ClientSession{}
		r.byPath[p] = subs
	}
	subs[subKey{owner, uri}] = session
	r.count++
	return nil
}

// remove ends owner's subscription to uri, if any.
func (r *subscriptions) remove(owner any, uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(owner, uri)
}

func (r *subscriptions) removeLocked(owner any, uri string) {
	p, ok := r.byOwner[owner][uri]
	if !ok {
		return
	}
	delete(r.byOwner[owner], uri)
	if len(r.byOwner[owner]) == 0 {
		delete(r.byOwner, owner)
	}
	delete(r.byPath[p], subKey{owner, uri})
	if len(r.byPath[p]) == 0 {
		delete(r.byPath, p)
	}
	r.count--
}

// drop ends every subscription of owner.
func (r *subscriptions) drop(owner any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uri := range r.byOwner[owner] {
		r.removeLocked(owner, uri)
	}
	switch o := owner.(type) {
	case server.ClientSession:
		delete(r.dropped, o)
	case listener:
		delete(r.dropped, o.session)
	}
}

// firstDrop reports whether a notification to session is the first one
// dropped since its subscriptions began, and records it.
func (r *subscriptions) firstDrop(session server.ClientSession) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dropped[session] {
		return false
	}
	r.dropped[session] = true
	return true
}

// target is one notification to send.
type target struct {
	session server.ClientSession
	uri     string
}

// affected returns the subscriptions an event concerns: those to its path,
// or, when events were lost (EventResync, whose path is the watched
// prefix), all of them. The store emits one event per entry a change
// touches (each file of a recursive removal or a moved tree), so a
// directory's event concerns no file below it.
func (r *subscriptions) affected(ev store.Event) []target {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []target
	collect := func(subs map[subKey]server.ClientSession) {
		for k, session := range subs {
			out = append(out, target{session, k.uri})
		}
	}
	if ev.Kind != store.EventResync {
		collect(r.byPath[ev.Path])
		return out
	}
	for p, subs := range r.byPath {
		if depotpath.Within(p, ev.Path) {
			collect(subs)
		}
	}
	return out
}

// to returns the subscriptions to the resource recorded under key (see
// subscriptionPath).
func (r *subscriptions) to(key string) []target {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]target, 0, len(r.byPath[key]))
	for k, session := range r.byPath[key] {
		out = append(out, target{session, k.uri})
	}
	return out
}

// notifyUpdated sends notifications/resources/updated for t. It never
// blocks: a session whose notification queue is full (its client is not
// reading) misses the notification; the first miss of a session is logged.
func (s *Resources) notifyUpdated(t target) {
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: mcp.MethodNotificationResourceUpdated,
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": t.uri}},
		},
	}
	select {
	case t.session.NotificationChannel() <- n:
	default:
		if s.subs.firstDrop(t.session) {
			s.log.Warn("mcp resource notifications dropped: the client is not reading them and its queue is full (further drops for this session are not logged)", "uri", t.uri, "session", t.session.SessionID())
		}
	}
}

// Watch turns store events into resource notifications until ctx is done
// or the store closes. It is the Server's one watcher goroutine, started by
// New and stopped by Close.
func (s *Resources) Watch(ctx context.Context) {
	events, err := s.rt.WatchAll(ctx)
	if err != nil {
		s.watchFailed(ctx, err)
		return
	}
	for ev := range events {
		targets := s.subs.affected(ev)
		if len(targets) == 0 {
			continue
		}
		s.waitApplied(ctx, ev.Revision)
		for _, t := range targets {
			s.notifyUpdated(t)
		}
	}
}

// waitApplied waits, when Options.Applied is set, until the mount shows
// revision rev, so that a client that reads the mount on a notification
// sees the change, as it would after a tool's reply. A failure is logged
// and the notification sent anyway.
func (s *Resources) waitApplied(ctx context.Context, rev uint64) {
	if s.env.Applied == nil {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, s.env.CommitTimeout)
	defer cancel()
	if err := s.env.Applied(wctx, rev); err != nil && ctx.Err() == nil {
		s.log.Warn("mcp resource notification sent before the mount confirmed the change", "revision", rev, "err", err)
	}
}

// watchFailed logs why the watcher could not start, unless the Server or
// the store was closing anyway.
func (s *Resources) watchFailed(ctx context.Context, err error) {
	if ctx.Err() != nil || errors.Is(err, store.ErrClosed) {
		return
	}
	s.log.Error("mcp resource watcher stopped: subscribers get no notifications", "err", err)
}
