package auth_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
)

// recordingSink keeps the failures it receives.
type recordingSink struct {
	mu  sync.Mutex
	got []auth.Failure
}

func (s *recordingSink) AuthFailure(_ context.Context, f auth.Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, f)
}

func (s *recordingSink) failures() []auth.Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]auth.Failure(nil), s.got...)
}

// TestBursts: the first refusal from an address passes at once, the rest
// of its window arrive as one failure with their count; another address
// has its own burst; Close reports what is still counted.
func TestBursts(t *testing.T) {
	tests := []struct {
		name  string
		close bool // Close before the window ends
	}{{"window ends", false}, {"closed", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &recordingSink{}
			window := 50 * time.Millisecond
			if tt.close {
				window = time.Hour
			}
			b := auth.NewBursts(sink, window)
			for i := range 100 {
				b.AuthFailure(context.Background(), auth.Failure{Remote: "192.0.2.1:" + string(rune('0'+i%10)), Reason: "token_unknown"})
			}
			b.AuthFailure(context.Background(), auth.Failure{Remote: "192.0.2.2:1", Reason: "token_unknown"})
			if got := sink.failures(); len(got) != 2 || got[0].Count != 1 || got[1].Count != 1 {
				t.Fatalf("at once: %+v; want the first of each address", got)
			}
			if tt.close {
				b.Close()
			} else {
				deadline := time.Now().Add(10 * time.Second)
				for len(sink.failures()) < 3 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
			}
			got := sink.failures()
			if len(got) != 3 || got[2].Count != 99 || got[2].Remote != "192.0.2.1:9" {
				t.Fatalf("after the window: %+v; want one more failure counting 99", got)
			}
			b.Close()
			b.AuthFailure(context.Background(), auth.Failure{Remote: "192.0.2.1:1"})
			if n := len(sink.failures()); n != 4 {
				t.Errorf("after Close: %d failures, want each passed on", n)
			}
		})
	}
}
