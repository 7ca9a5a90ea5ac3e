package nats

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// transient reports an error that a request to a JetStream cluster can
// meet while a server is lost and the cluster elects a new leader or the
// connection moves to another server. A request that failed this way was
// not stored.
func transient(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, errBatchDropped)
}

// ambiguous reports an error after which a request may or may not have
// been stored: the answer did not come in time.
func ambiguous(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrAsyncPublishTimeout)
}

// maxBackoff bounds the wait between two attempts: a cluster that just
// elected a leader is asked again within it.
const maxBackoff = 100 * time.Millisecond

// retry calls fn until it succeeds, fails with an error that is not
// transient, or ctx is done (then the last error is returned), waiting a
// little longer after each transient failure, up to maxBackoff.
func retry(ctx context.Context, fn func() error) error {
	wait := 20 * time.Millisecond
	for {
		err := fn()
		if err == nil || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, maxBackoff)
	}
}
