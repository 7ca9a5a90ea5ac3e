package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/store/fetch"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Requests is a fetch.Exchange on the cluster: each host's pending
// requests are keys <host>.<sha256 of the path> of the KV bucket
// <prefix>-requests, which every host watches. A key not refreshed for
// three fetch.RefreshInterval (its host died) is ignored, and expires
// from the bucket. It is safe for concurrent use.
type Requests struct {
	kv   jetstream.KeyValue
	host string
	addr addresses // a request's hash is kept as records keep it
}

var _ fetch.Exchange = (*Requests)(nil)

// staleAfter is when a request not refreshed is ignored.
const staleAfter = 3 * fetch.RefreshInterval

// sharedRequest is a request as stored in the bucket.
type sharedRequest struct {
	fetch.Request
	At time.Time `json:"at"` // last refresh
}

// Requests returns the store's request exchange, creating its bucket if
// needed. Each call is a new host identity: call it once per process.
func (s *Store) Requests(ctx context.Context) (*Requests, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	kv, err := s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      s.opts.Prefix + "-requests",
		Description: "depotfs pending demand-fetch requests, per host",
		History:     1,
		TTL:         2 * staleAfter,
		Replicas:    s.opts.Replicas,
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("nats: requests bucket: %w", err)
	}
	return &Requests{kv: kv, host: nuid.Next(), addr: s.chunks.addr}, nil
}

func (r *Requests) key(path string) string { return r.host + "." + hashHex(path)[:32] }

// Publish announces or refreshes this host's request.
func (r *Requests) Publish(ctx context.Context, req fetch.Request) error {
	var err error
	if req.SHA256, err = r.addr.seal(req.SHA256); err != nil {
		return err
	}
	b, err := json.Marshal(sharedRequest{Request: req, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	return retry(ctx, func() error {
		_, err := r.kv.Put(ctx, r.key(req.Path), b)
		return err
	})
}

// Withdraw removes this host's request for path.
func (r *Requests) Withdraw(ctx context.Context, path string) error {
	err := retry(ctx, func() error { return r.kv.Delete(ctx, r.key(path)) })
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}

// Watch calls fn with the other hosts' fresh requests whenever they
// change, until ctx is done.
func (r *Requests) Watch(ctx context.Context, fn func([]fetch.Request)) error {
	w, err := r.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("nats: watching requests: %w", err)
	}
	defer w.Stop()
	all := map[string]sharedRequest{}
	var last []fetch.Request
	emit := func() {
		var out []fetch.Request
		for _, q := range all {
			if time.Since(q.At) < staleAfter {
				out = append(out, q.Request)
			}
		}
		slices.SortFunc(out, func(a, b fetch.Request) int { return strings.Compare(a.Path, b.Path) })
		if slices.EqualFunc(out, last, func(a, b fetch.Request) bool { return a.Path == b.Path && a.Waiters == b.Waiters }) && last != nil {
			return
		}
		last = out
		if last == nil {
			last = []fetch.Request{}
		}
		fn(out)
	}
	tick := time.NewTicker(fetch.RefreshInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			emit()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("nats: the requests watch ended")
			}
			if e == nil {
				emit() // the initial values are all delivered
				continue
			}
			if strings.HasPrefix(e.Key(), r.host+".") {
				continue
			}
			if e.Operation() == jetstream.KeyValuePut {
				var q sharedRequest
				err := json.Unmarshal(e.Value(), &q)
				if err == nil {
					q.SHA256, err = r.addr.open(q.SHA256)
				}
				if err == nil {
					all[e.Key()] = q
				}
			} else {
				delete(all, e.Key())
			}
			emit()
		}
	}
}
