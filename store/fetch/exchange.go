package fetch

import (
	"context"
	"time"
)

// Exchange shares pending requests between the brokers of the hosts of one
// depot, so that an agent connected to any host sees, and can answer, the
// request of a reader on any other. A Broker publishes its own requests
// (refreshing them every RefreshInterval while they are pending) and
// merges the others' into Pending: readers of one file on several hosts
// make one request there, with their waiters added up.
//
// Implementations are safe for concurrent use. package store/nats has
// one; a single-host depot needs none.
type Exchange interface {
	// Publish announces or refreshes this host's request for r.Path.
	Publish(ctx context.Context, r Request) error
	// Withdraw removes this host's request for path.
	Withdraw(ctx context.Context, path string) error
	// Watch calls fn with every other host's pending requests (one per
	// host and path, stale ones left out) each time they change, until
	// ctx is done.
	Watch(ctx context.Context, fn func([]Request)) error
}

// RefreshInterval is how often a Broker republishes its pending requests
// to its Exchange; an Exchange drops a request not refreshed for three
// intervals (its host is gone).
const RefreshInterval = 5 * time.Second
