package main

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/beneath"
)

// TestAfterRate: a rate-limit refusal an older server can never pass
// halves a tar stream's entries and bytes, and fails a single file with
// an error naming --rate-byte-burst; a finite wait is waited once per try,
// up to rateTries; other errors pass through; a cancelled push stops
// waiting.
func TestAfterRate(t *testing.T) {
	batch := make([]pushEntry, 4)
	for i := range batch {
		batch[i] = pushEntry{st: beneath.Stat{Size: 10}}
	}
	never := &refusal{typ: "rate_limited", msg: "retry after 2147483647 s", retry: math.MaxInt32}
	soon := &refusal{typ: "rate_limited", msg: "retry after 1 s", retry: 1}
	p := &pusher{prog: newProgress(io.Discard, 0, 0, false), batchEntries: pushBatchEntries, batchBytes: pushBatchBytes}
	ctx := context.Background()

	tries := 0
	if again, err := p.afterRate(ctx, never, batch, &tries); !again || err != nil || p.batchEntries != 2 || p.batchBytes != 20 {
		t.Errorf("a stream never passing: again %v, %v, batch %d entries %d bytes; want again at once with 2 entries, 20 bytes", again, err, p.batchEntries, p.batchBytes)
	}
	if again, err := p.afterRate(ctx, never, nil, &tries); again || err == nil || !strings.Contains(err.Error(), "--rate-byte-burst") {
		t.Errorf("a file never passing: again %v, %v; want an error naming --rate-byte-burst", again, err)
	}
	if again, err := p.afterRate(ctx, soon, nil, &tries); !again || err != nil || tries != 1 {
		t.Errorf("a wait of 1 s: again %v, %v, tries %d; want again after it, 1 try", again, err, tries)
	}
	tries = rateTries
	if again, err := p.afterRate(ctx, soon, nil, &tries); again || !errors.Is(err, error(soon)) {
		t.Errorf("after %d tries: again %v, %v; want the refusal", rateTries, again, err)
	}
	other := &refusal{typ: "limit", msg: "too big"}
	if again, err := p.afterRate(ctx, other, batch, &tries); again || err != other {
		t.Errorf("another refusal: again %v, %v; want it unchanged", again, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tries = 0
	if again, err := p.afterRate(cancelled, soon, nil, &tries); again || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled push: again %v, %v; want context.Canceled", again, err)
	}
}
