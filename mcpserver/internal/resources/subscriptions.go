package resources

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/feed"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/mcpserver/internal/outbox"
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
	byPath  map[string]map[subKey]sub // clean path → subscription → who to notify
	byOwner map[any]map[string]string // owner → URI → clean path
	count   int
	dropped map[server.ClientSession]bool // sessions whose full queue was logged
	// lost holds the subscriptions a notification was dropped for, with
	// the revision of the last one sent before: the next one sent says so.
	lost map[subKey]uint64
	sent map[subKey]uint64 // the revision of the last notification sent
}

// sub is one subscription's session and what its owner may read when it
// subscribed: a subscription to a directory is told only of the changes
// below it that its owner may read. A subscriptions/listen's also has the
// listen's id, which its notifications carry, and the stream of the listen
// over HTTP, where they are written in order (package outbox).
type sub struct {
	session  server.ClientSession
	perms    policy.Set
	listenID any
	out      *outbox.Stream
}

func newSubscriptions(max int) *subscriptions {
	return &subscriptions{
		max:     max,
		byPath:  map[string]map[subKey]sub{},
		byOwner: map[any]map[string]string{},
		dropped: map[server.ClientSession]bool{},
		lost:    map[subKey]uint64{},
		sent:    map[subKey]uint64{},
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

// add records that owner, notified as s says, subscribed to uri, which
// names the clean path p. Subscribing twice is one subscription.
func (r *subscriptions) add(owner any, s sub, uri, p string) error {
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
		subs = map[subKey]sub{}
		r.byPath[p] = subs
	}
	subs[subKey{owner, uri}] = s
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
	delete(r.lost, subKey{owner, uri})
	delete(r.sent, subKey{owner, uri})
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

// target is one notification to send: to the subscription key, as s says.
type target struct {
	key subKey
	sub
}

// affected returns the subscriptions an event concerns: those to its path
// or to a directory above it whose owner may read the path, or, when
// events were lost (EventResync, whose path is the watched prefix), all of
// them. The store emits one event per entry a change touches (each file
// of a recursive removal or a moved tree), so a subscription to a
// directory hears of every one below it.
func (r *subscriptions) affected(ev store.Event) []target {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []target
	if ev.Kind == store.EventResync {
		for p, subs := range r.byPath {
			if depotpath.Within(p, ev.Path) {
				for k, s := range subs {
					out = append(out, target{k, s})
				}
			}
		}
		return out
	}
	for p := ev.Path; ; p = path.Dir(p) {
		for k, s := range r.byPath[p] {
			if feed.Visible(s.perms, ev.Path) {
				out = append(out, target{k, s})
			}
		}
		if p == depotpath.Root {
			return out
		}
	}
}

// gap returns, for a subscription a notification was dropped for, the
// revision of the last one sent before.
func (r *subscriptions) gap(k subKey) (lostAfter uint64, lost bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lostAfter, lost = r.lost[k]
	return lostAfter, lost
}

// delivered records whether the notification of revision rev (0: of no
// change) reached t's session.
func (r *subscriptions) delivered(t target, rev uint64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, live := r.byOwner[t.key.owner][t.key.uri]; !live {
		return // unsubscribed meanwhile: nothing to remember
	}
	if !ok {
		if _, already := r.lost[t.key]; !already {
			r.lost[t.key] = r.sent[t.key]
		}
		return
	}
	delete(r.lost, t.key)
	r.sent[t.key] = max(r.sent[t.key], rev)
}

// to returns the subscriptions to the resource recorded under key (see
// subscriptionPath).
func (r *subscriptions) to(key string) []target {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]target, 0, len(r.byPath[key]))
	for k, s := range r.byPath[key] {
		out = append(out, target{k, s})
	}
	return out
}

// notifyUpdated sends notifications/resources/updated for t, with the
// change in _meta (package feed: path, kind, type, revision, size,
// sha256, and from for a move from a path t's owner may read) when there
// is one. It never blocks: a client whose queue is full (it is not
// reading) misses the notification; the next one that reaches it carries
// resync: true and lost_after, the revision of the last one it got, so the
// client can read what it missed from guide_changes or GET /changes. The
// first miss of a session is logged.
//
// The queue is the one of t's stream over HTTP (a subscriptions/listen's,
// or the session's GET stream while one is open: package outbox), which
// writes the notifications there in order; otherwise mcp-go's session
// channel, which a stdio session's writer reads, and, over HTTP, any
// request of the session in flight.
func (s *Resources) notifyUpdated(t target, ev *store.Event) {
	params := mcp.NotificationParams{AdditionalFields: map[string]any{"uri": t.key.uri}}
	var rev uint64
	if ev != nil && ev.Kind != store.EventResync {
		c := feed.ChangeFor(t.perms, *ev)
		rev = c.Revision
		params.Meta = map[string]any{"path": c.Path, "kind": c.Kind, "type": c.Type, "revision": c.Revision, "size": c.Size}
		if c.SHA256 != "" {
			params.Meta["sha256"] = c.SHA256
		}
		if c.From != "" {
			params.Meta["from"] = c.From
		}
	}
	if after, lost := s.subs.gap(t.key); lost {
		if params.Meta == nil {
			params.Meta = map[string]any{}
		}
		params.Meta["resync"], params.Meta["lost_after"] = true, after
	}
	n := mcp.JSONRPCNotification{
		JSONRPC:      mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: mcp.MethodNotificationResourceUpdated, Params: params},
	}
	out := t.out
	if id := t.session.SessionID(); out == nil && t.listenID == nil && id != "" {
		out = s.streams.Of(id)
	}
	var ok bool
	if out != nil {
		if t.listenID != nil {
			// Every message on a subscriptions/listen stream carries its
			// id, as mcp-go tags those it writes.
			if n.Params.Meta == nil {
				n.Params.Meta = map[string]any{}
			}
			n.Params.Meta[mcp.MetaKeySubscriptionID] = t.listenID
		}
		ok = out.Put(n)
	} else {
		select {
		case t.session.NotificationChannel() <- n:
			ok = true
		default:
		}
	}
	s.subs.delivered(t, rev, ok)
	if !ok && s.subs.firstDrop(t.session) {
		s.log.Warn("mcp resource notifications dropped: the client is not reading them and its queue is full (further drops for this session are not logged)", "uri", t.key.uri, "session", t.session.SessionID())
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
			s.notifyUpdated(t, &ev)
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
