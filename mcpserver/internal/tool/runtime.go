package tool

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/store"
)

// Auditor keeps the audit log; *audit.Log implements it. Both methods are
// called from many goroutines at once.
type Auditor interface {
	// Append writes one record durably, setting its Seq, Prev and Hash.
	Append(r *audit.Record) error
	// Err reports a failure of the log that makes it refuse records, or
	// nil.
	Err() error
}

// Runtime is the server's side of the tool pipeline: the store, the
// policy, the rate limiter, the per-identity counts and the audit log that
// every call goes through. The server makes one in New, registers each
// tool through Handler (before serving), and hands nothing of it to tool
// bodies but their Call. After registration it is safe for concurrent use.
type Runtime struct {
	st      store.Store // reached only through Store and View
	env     *Env
	policy  *policy.Host
	audit   Auditor
	held    unaudited // records of committed calls the log could not take yet
	limiter *ratelimit.Limiter
	log     *slog.Logger
	stats   identityStats
	defs    map[string]def // every registered tool's permissions, by name; written only while registering
	// streaming is the bytes of raw uploads received and not yet
	// committed or dropped (see intake).
	streaming atomic.Int64
	// snapshotMu makes counting a caller's snapshots and creating one a
	// single step (Store.CreateSnapshot).
	snapshotMu sync.Mutex
}

// NewRuntime returns the pipeline over st. env is shared with the tool
// bodies; p bounds every caller's grants; a nil audit keeps no audit log;
// rate limits calls and content bytes per identity (see ratelimit).
func NewRuntime(st store.Store, env *Env, p *policy.Host, audit Auditor, rate ratelimit.Limits) *Runtime {
	return &Runtime{
		st: st, env: env, policy: p, audit: audit,
		limiter: ratelimit.New(rate), log: env.Logger,
		defs: map[string]def{},
	}
}
