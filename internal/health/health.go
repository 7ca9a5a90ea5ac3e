// Package health answers whether depotfs works: whether the store can
// commit and the mount answers. It serves /healthz (200 or 503 with the
// failing check's reason, no authentication, nothing about the depot's
// content) and feeds the systemd watchdog. A check's reason is written for
// anyone who can reach /healthz: the checks depotfs serve builds return
// fixed phrases, never paths or errors from the depot; details go to the
// log.
package health

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// DefaultTimeout bounds one run of all the checks.
const DefaultTimeout = 5 * time.Second

// Check is one condition of health. Run returns nil when it holds, or an
// error whose text is safe to show anyone.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
	// MaxAge, when positive, lets a result stand for this long: the checks
	// run within MaxAge of the last run that returned get its result
	// without running Run again. It bounds what a check costs however
	// often anyone asks (the store's check is a commit with its fsyncs).
	MaxAge time.Duration
}

// Checker runs its checks in order and stops at the first failure. A
// check that does not return within the timeout fails as "not answering";
// its goroutine is left to finish, and while it has not, later runs of
// that check fail at once instead of stacking more goroutines. Callers
// that ask while a check runs wait for that run and share its result, so
// concurrent requests cost one run. It is safe for concurrent use.
type Checker struct {
	checks  []Check
	timeout time.Duration

	mu      sync.Mutex
	running map[string]*flight // the run of each check in progress
	last    map[string]*flight // the last run of each check with a MaxAge
}

// flight is one run of a check; done is closed when it returns, with err
// and at (the time it returned) set.
type flight struct {
	done      chan struct{}
	err       error
	at        time.Time
	abandoned bool // a caller ran out of time waiting for it; guarded by Checker.mu
}

// New returns a Checker of checks; timeout 0 means DefaultTimeout.
func New(timeout time.Duration, checks ...Check) *Checker {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Checker{checks: checks, timeout: timeout, running: map[string]*flight{}, last: map[string]*flight{}}
}

// ErrNotAnswering is the reason of a check that ran out of time.
var ErrNotAnswering = errors.New("not answering")

// Check runs the checks and returns the first failure as "name: reason".
func (c *Checker) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	for _, ch := range c.checks {
		if err := c.run(ctx, ch); err != nil {
			return fmt.Errorf("%s: %w", ch.Name, err)
		}
	}
	return nil
}

func (c *Checker) run(ctx context.Context, ch Check) error {
	c.mu.Lock()
	if r, ok := c.last[ch.Name]; ok && ch.MaxAge > 0 && time.Since(r.at) < ch.MaxAge {
		c.mu.Unlock()
		return r.err
	}
	f := c.running[ch.Name]
	switch {
	case f != nil && f.abandoned:
		c.mu.Unlock()
		return fmt.Errorf("%w (an earlier check has not returned)", ErrNotAnswering)
	case f == nil:
		f = &flight{done: make(chan struct{})}
		c.running[ch.Name] = f
		// The run outlives a caller that gives up: it is not bound by
		// one caller's context, only by the checker's timeout.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
		go func() {
			defer cancel()
			err := ch.Run(rctx)
			c.mu.Lock()
			delete(c.running, ch.Name)
			f.err, f.at = err, time.Now()
			if ch.MaxAge > 0 {
				c.last[ch.Name] = f
			}
			c.mu.Unlock()
			close(f.done)
		}()
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		c.mu.Lock()
		f.abandoned = true
		c.mu.Unlock()
		return fmt.Errorf("%w within %v", ErrNotAnswering, c.timeout)
	}
}

// Handler serves the result: 200 "ok", or 503 with the failure, as plain
// text. It needs no authentication and shows nothing else.
func (c *Checker) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := c.Check(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "unhealthy: %v\n", err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}
