package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// How push bears the server's rate limit (serve --rate-bytes): it waits
// what a refusal asks, at most rateWaitMax at a time and rateTries times
// for one PUT, then sends the same bytes again.
const (
	rateWaitMax = 10 * time.Minute
	rateTries   = 10
)

// afterRate decides whether the PUT of batch (the entries of a tar stream;
// nil for a single file) that failed with err is sent again, and returns
// the error to report when it is not. A refusal by the server's rate
// limit is sent again after the wait it asks for; one whose wait is beyond
// rateWaitMax (an older depotfs refuses a request larger than its byte
// burst for ever, "retry after 2147483647 s") is sent again at once as a
// smaller tar stream, the smaller size kept for the rest of the push, when
// the batch holds more than one entry. tries counts the waits for this
// PUT.
func (p *pusher) afterRate(ctx context.Context, err error, batch []pushEntry, tries *int) (bool, error) {
	ref, ok := errors.AsType[*refusal](err)
	if !ok || ref.typ != "rate_limited" {
		return false, err
	}
	wait := time.Duration(ref.retry) * time.Second
	switch {
	case wait > rateWaitMax && len(batch) > 1:
		p.batchEntries = len(batch) / 2
		p.batchBytes = max(batchBytes(batch)/2, 1)
		return true, nil
	case wait > rateWaitMax:
		return false, fmt.Errorf("%w: push does not wait longer than %v at a time; a file larger than the server's --rate-byte-burst passes on a depotfs server that charges it from a full bucket (or raise --rate-byte-burst)", err, rateWaitMax)
	case *tries >= rateTries:
		return false, fmt.Errorf("%w (refused by the server's rate limit %d times in a row)", err, *tries+1)
	}
	*tries++
	fmt.Fprintf(p.prog.w, "depotfs push: the server's rate limit asks to wait %v; sending again then\n", wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-t.C:
		return true, nil
	}
}

// batchBytes is what the regular files of batch hold.
func batchBytes(batch []pushEntry) int64 {
	var n int64
	for _, e := range batch {
		if e.st.Mode.IsRegular() {
			n += e.st.Size
		}
	}
	return n
}
