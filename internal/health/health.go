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
}

// Checker runs its checks in order and stops at the first failure. A
// check that does not return within the timeout fails as "not answering";
// its goroutine is left to finish, and while it has not, later runs of
// that check fail at once instead of stacking more goroutines. It is safe
// for concurrent use.
type Checker struct {
	checks  []Check
	timeout time.Duration

	mu      sync.Mutex
	running map[string]bool // checks whose timed-out run has not returned yet
}

// New returns a Checker of checks; timeout 0 means DefaultTimeout.
func New(timeout time.Duration, checks ...Check) *Checker {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Checker{checks: checks, timeout: timeout, running: map[string]bool{}}
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
	if c.running[ch.Name] {
		c.mu.Unlock()
		return fmt.Errorf("%w (an earlier check has not returned)", ErrNotAnswering)
	}
	c.running[ch.Name] = true
	c.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		err := ch.Run(ctx)
		c.mu.Lock()
		delete(c.running, ch.Name)
		c.mu.Unlock()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
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
