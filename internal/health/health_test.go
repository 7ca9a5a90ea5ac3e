package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/health"
)

func get(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

func TestChecker(t *testing.T) {
	var storeErr atomic.Pointer[error]
	block := make(chan struct{})
	var blocking atomic.Bool
	c := health.New(50*time.Millisecond,
		health.Check{Name: "store", Run: func(context.Context) error {
			if p := storeErr.Load(); p != nil {
				return *p
			}
			return nil
		}},
		health.Check{Name: "mount", Run: func(ctx context.Context) error {
			if blocking.Load() {
				<-block
			}
			return nil
		}},
	)
	if code, body := get(t, c.Handler()); code != 200 || body != "ok\n" {
		t.Errorf("healthy: %d %q", code, body)
	}
	failure := errors.New("cannot commit")
	storeErr.Store(&failure)
	if code, body := get(t, c.Handler()); code != 503 || body != "unhealthy: store: cannot commit\n" {
		t.Errorf("store failing: %d %q", code, body)
	}
	storeErr.Store(nil)
	blocking.Store(true)
	if err := c.Check(context.Background()); !errors.Is(err, health.ErrNotAnswering) {
		t.Errorf("a hanging check: %v", err)
	}
	if err := c.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "earlier check has not returned") {
		t.Errorf("while the hanging check still runs: %v", err)
	}
	blocking.Store(false)
	close(block)
	deadline := time.Now().Add(10 * time.Second)
	for c.Check(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the check never recovered")
		}
		time.Sleep(time.Millisecond)
	}
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/healthz", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

// TestMaxAge: a check with a MaxAge runs once for any number of requests
// within it, concurrent or not, and again once it has passed.
func TestMaxAge(t *testing.T) {
	var runs atomic.Int64
	c := health.New(time.Second, health.Check{Name: "store", MaxAge: time.Hour, Run: func(context.Context) error {
		runs.Add(1)
		time.Sleep(10 * time.Millisecond)
		return nil
	}})
	done := make(chan int, 50)
	for range cap(done) {
		go func() {
			code, _ := get(t, c.Handler())
			done <- code
		}()
	}
	for range cap(done) {
		if code := <-done; code != http.StatusOK {
			t.Errorf("status %d while healthy", code)
		}
	}
	for range 100 {
		get(t, c.Handler())
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("%d runs for 150 requests within MaxAge; want 1", n)
	}
}
