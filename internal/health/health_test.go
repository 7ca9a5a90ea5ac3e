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
