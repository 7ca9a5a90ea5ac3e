package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/health"
	"github.com/depotfs/depotfs/internal/metrics"
	"github.com/depotfs/depotfs/mcpserver"
)

// meteredAudit feeds every audit record, the one account of each call and
// refused authentication that mcpserver keeps, to the metrics as well.
type meteredAudit struct {
	mcpserver.EarlyAuditor
	m *metrics.Metrics
}

var _ mcpserver.EarlyAuditor = meteredAudit{}

func (a meteredAudit) Append(r *audit.Record) error {
	err := a.EarlyAuditor.Append(r)
	a.count(r)
	return err
}

func (a meteredAudit) AppendDeferred(r *audit.Record) error {
	err := a.EarlyAuditor.AppendDeferred(r)
	a.count(r)
	return err
}

// Confirm counts r, the call's record as of its end (its whole
// duration), when the early record is settled: a call with an early
// record is counted once, here or in Amend.
func (a meteredAudit) Confirm(early, r *audit.Record) error {
	err := a.EarlyAuditor.Confirm(early, r)
	a.count(r)
	return err
}

// Amend counts r, the call's outcome, instead of the early record it
// amends.
func (a meteredAudit) Amend(early, r *audit.Record) error {
	err := a.EarlyAuditor.Amend(early, r)
	a.count(r)
	return err
}

// count feeds r to the metrics.
func (a meteredAudit) count(r *audit.Record) {
	switch r.Event {
	case audit.EventAuth:
		// Refused handshakes and requests are counted one by one before
		// they are grouped into bursts (serve's sink); the other records
		// (revoked credentials) are counted here.
		if r.Stage != string(auth.StageHandshake) && r.Stage != string(auth.StageRequest) {
			a.m.AuthFailure(r.Stage)
		}
	case audit.EventCall:
		outcome, refused := cmp.Or(r.Error, metrics.OutcomeOK), ""
		if r.Decision == audit.Deny {
			refused = metrics.RefusedDenied
			if r.Error == string(mcpserver.ErrorRateLimited) {
				refused = metrics.RefusedRateLimited
			}
		}
		var in int64
		if r.Content != nil && r.Error == "" && r.Decision == audit.Allow && r.Status != "" {
			in = r.Content.Size
		}
		a.m.Call(r.Tool, outcome, refused, time.Duration(r.DurationMS*float64(time.Millisecond)), in)
	}
}

// observeHTTP counts notification streams while they are open, sessions
// started (initialize answered with a session id) and sessions deleted.
func observeHTTP(m *metrics.Metrics, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet:
			defer m.StreamOpened(metrics.StreamGET)()
		case r.Method == http.MethodPost && r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen):
			defer m.StreamOpened(metrics.StreamListen)()
		}
		hadSession := r.Header.Get(mcp.HeaderSessionID) != ""
		if r.Method == http.MethodDelete && hadSession {
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			h.ServeHTTP(sw, r)
			if sw.status < 300 {
				m.SessionDeleted()
			}
			return
		}
		h.ServeHTTP(w, r)
		if !hadSession && w.Header().Get(mcp.HeaderSessionID) != "" {
			m.SessionStarted()
		}
	})
}

// statusWriter remembers the status of a reply.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// pinger is a store that can tell whether it can commit now; both stores
// are.
type pinger interface {
	Ping(ctx context.Context) error
}

// storeCheckMaxAge is how long the store check's result stands: /healthz
// needs no credentials, so however often anyone asks, the store is looked
// at once a second at most. A second is well within what a load balancer
// or the systemd watchdog needs to notice a store that stopped committing.
const storeCheckMaxAge = time.Second

// writable is a store that can tell whether it could commit without
// committing (bolt: a read transaction, the last commit's outcome, the
// filesystem's flags and free space).
type writable interface {
	Writable(ctx context.Context) error
}

// healthChecks are what /healthz and the systemd watchdog check: serving
// (the context a signal ends) is not over, the store can commit, and the
// mount (when there is one) answers statfs. A store that can say so
// without committing (bolt) is asked that way, so probes write nothing;
// the others (NATS: a round trip that needs the stream's quorum, nothing
// on this host's disk) are pinged. The reasons are fixed phrases, safe
// for anyone who can reach /healthz; the errors behind them go to the
// log.
func healthChecks(serving context.Context, st pinger, mountDir string, log *slog.Logger) *health.Checker {
	probe := st.Ping
	if w, ok := st.(writable); ok {
		probe = w.Writable
	}
	checks := []health.Check{{Name: "serve", Run: func(context.Context) error {
		// A load balancer stops sending work as soon as a shutdown begins.
		if serving.Err() != nil {
			return errors.New("shutting down")
		}
		return nil
	}}}
	if mountDir != "" {
		checks = append(checks, health.Check{Name: "mount", Run: func(context.Context) error {
			var sfs unix.Statfs_t
			err := unix.Statfs(mountDir, &sfs)
			switch {
			case err == nil && sfs.Type != fuseSuperMagic:
				log.Warn("health: the mount point shows another filesystem", "mount", mountDir, "type", fmt.Sprintf("%#x", sfs.Type))
				return errors.New("not mounted")
			case errors.Is(err, syscall.ENOTCONN), errors.Is(err, syscall.ECONNABORTED):
				log.Warn("health: the mount is gone", "mount", mountDir, "err", err)
				return errors.New("gone (the FUSE connection is closed)")
			case err != nil:
				log.Warn("health: the mount does not answer", "mount", mountDir, "err", err)
				return errors.New("does not answer statfs")
			}
			return nil
		}})
	}
	// The store last: the watchdog passes over a full or read-only disk
	// (watchdogCheck), and the mount is then checked all the same.
	checks = append(checks, health.Check{Name: "store", MaxAge: storeCheckMaxAge, Run: func(ctx context.Context) error {
		err := probe(ctx)
		if err == nil {
			return nil
		}
		log.Warn("health: the store cannot commit", "err", err)
		switch {
		case errors.Is(err, syscall.EROFS):
			return diskCondition("read-only filesystem")
		case errors.Is(err, syscall.ENOSPC):
			return diskCondition("disk full")
		}
		return errors.New("cannot commit")
	}})
	return health.New(0, checks...)
}

// diskCondition is the store check's failure for a disk that is full or
// mounted read-only: writes fail, reads work.
type diskCondition string

func (d diskCondition) Error() string { return string(d) }

// watchdogCheck is what the systemd watchdog asks: the health checks,
// passing over a full or read-only disk. /healthz reports those (a load
// balancer should send writes elsewhere), but a restart cannot free a
// disk, and reads keep working until someone does.
func watchdogCheck(c *health.Checker) func(context.Context) error {
	return func(ctx context.Context) error {
		err := c.Check(ctx)
		if _, ok := errors.AsType[diskCondition](err); ok {
			return nil
		}
		return err
	}
}

// fuseSuperMagic is FUSE's f_type in statfs.
const fuseSuperMagic = 0x65735546
