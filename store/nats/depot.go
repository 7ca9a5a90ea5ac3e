package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// ErrNoDepot reports a cluster that holds no depot under the prefix,
// opened by a host that served one (Options.Depot) without
// Options.Create: the depot's servers lost their storage, or the host
// reaches other servers than before (a port taken by another JetStream
// server after a restart). Creating an empty depot there would serve an
// empty tree in place of the one the host served.
var ErrNoDepot = errors.New("the cluster holds no depot under this prefix")

// ErrOtherDepot reports a cluster whose depot is not the one the host
// served (Options.Depot): another depot under the same prefix.
var ErrOtherDepot = errors.New("the cluster holds another depot than the one this host served")

// CreateMode says when Open may create the depot in a cluster that holds
// none under the prefix.
type CreateMode int

const (
	// CreateFirst, the zero value, creates the depot only for a host
	// that never served one (Options.Depot is ""): the very first start.
	// A host that served a depot refuses a cluster without it
	// (ErrNoDepot).
	CreateFirst CreateMode = iota
	// CreateNever never creates a depot (an export reads one).
	CreateNever
	// CreateAlways creates the depot when the cluster holds none, even for
	// a host that served another: the operator asked for a new depot.
	CreateAlways
)

// depotRecord is the value of keyDepot: the depot's id, recorded by the
// host that created the depot (or, for a depot created before ids, by the
// first host to open it since).
type depotRecord struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// Depot returns the depot's id, recorded in the cluster when the depot
// was created. A host keeps it with its local state and passes it as
// Options.Depot when it opens the depot again, so that it never serves
// another depot in its place. It is safe for concurrent use.
func (s *Store) Depot() string {
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	return s.view.st.depot
}

// treeExists reports whether the cluster holds the depot's tree stream.
func (s *Store) treeExists(ctx context.Context) (bool, error) {
	_, err := s.js.Stream(ctx, "KV_"+s.bucket)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("tree bucket: %w", err)
	}
	return true, nil
}

// createTree creates the tree bucket, with its first revision above
// Options.FirstRevision. A bucket is a stream; the key-value API cannot set
// a first sequence, so with one the stream is created as that API would
// create it (jetstream's prepareKeyValueConfig for this bucket), with
// FirstSeq. Another opener creating it at the same moment wins the name;
// its bucket is then bound as it is.
func (s *Store) createTree(ctx context.Context) error {
	if s.opts.FirstRevision == 0 {
		_, err := s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      s.bucket,
			Description: treeDescription,
			History:     1,
			Replicas:    s.opts.Replicas,
			Storage:     jetstream.FileStorage,
		})
		return err
	}
	_, err := s.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:               "KV_" + s.bucket,
		Description:        treeDescription,
		Subjects:           []string{"$KV." + s.bucket + ".>"},
		MaxMsgsPerSubject:  1,
		MaxBytes:           -1,
		MaxMsgSize:         -1,
		MaxMsgs:            -1,
		MaxConsumers:       -1,
		Storage:            jetstream.FileStorage,
		Replicas:           max(s.opts.Replicas, 1),
		AllowRollup:        true,
		DenyDelete:         true,
		Duplicates:         2 * time.Minute,
		AllowDirect:        true,
		Discard:            jetstream.DiscardNew,
		AllowAtomicPublish: true,
		FirstSeq:           s.opts.FirstRevision + 1,
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil
	}
	return err
}

// treeDescription describes the tree bucket's stream.
const treeDescription = "depotfs tree: entries, blobs, uploads"

// mayCreate decides, before anything is created, whether Open may go on
// in a cluster that holds no depot under the prefix.
func (s *Store) mayCreate() error {
	switch {
	case s.opts.Create == CreateNever:
		return fmt.Errorf("%w %q", ErrNoDepot, s.opts.Prefix)
	case s.opts.Depot != "" && s.opts.Create != CreateAlways:
		return fmt.Errorf("%w %q, but this host served depot %s there: it will not create an empty one in its place", ErrNoDepot, s.opts.Prefix, s.opts.Depot)
	}
	return nil
}

// identify makes sure the depot the view has read has an id, and that it
// is the one this host served (Options.Depot). created says this Open
// created the tree bucket: only then, or for a host that never served a
// depot (a depot made before ids existed), is a missing id recorded.
func (s *Store) identify(ctx context.Context, created bool) error {
	id := s.Depot()
	if id == "" {
		if s.opts.Depot != "" && !created {
			return fmt.Errorf("%w: the depot under prefix %q has no id, and this host served depot %s", ErrOtherDepot, s.opts.Prefix, s.opts.Depot)
		}
		if err := s.recordDepot(ctx); err != nil {
			return err
		}
		if err := s.Sync(ctx); err != nil {
			return fmt.Errorf("reading the depot's id: %w", err)
		}
		if id = s.Depot(); id == "" {
			return errors.New("reading the depot's id: recorded, but not found")
		}
		if created {
			s.log.Info("nats: created a new depot", "prefix", s.opts.Prefix, "depot", id)
		}
	}
	// A depot this Open created replaces, for this host, the one it
	// served (mayCreate allowed it).
	if s.opts.Depot != "" && id != s.opts.Depot && !created {
		return fmt.Errorf("%w: the depot under prefix %q is %s, this host served %s", ErrOtherDepot, s.opts.Prefix, id, s.opts.Depot)
	}
	return nil
}

// recordDepot records a new id for the depot unless one is recorded
// already: of hosts opening a new depot at once, the first one's id is
// the depot's.
func (s *Store) recordDepot(ctx context.Context) error {
	data, err := json.Marshal(depotRecord{ID: nuid.Next(), Created: s.now()})
	if err != nil {
		return err
	}
	m := nats.NewMsg(s.subject(keyDepot))
	m.Data = data
	m.Header.Set("Nats-Expected-Last-Subject-Sequence", "0")
	return retry(ctx, func() error {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		resp, err := s.nc.RequestMsgWithContext(rctx, m)
		if err != nil {
			return fmt.Errorf("recording the depot's id: %w", err)
		}
		var ack pubAck
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return fmt.Errorf("recording the depot's id: unreadable acknowledgement %q: %w", resp.Data, err)
		}
		if e := ack.Error; e != nil && e.ErrCode != errCodeWrongLastSeq {
			return fmt.Errorf("recording the depot's id: %s (code %d)", e.Description, e.ErrCode)
		}
		return nil
	})
}
