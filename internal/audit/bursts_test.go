package audit_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

// denial is a refused call of identity on path p, with a reason naming p
// as policy reasons do.
func denial(identity, p string) *audit.Record {
	return &audit.Record{
		Time: t0, Event: audit.EventCall, Identity: identity, Auth: "token", Tool: "fs_write", Error: "permission",
		Paths: []string{p}, Decision: audit.Deny, Reason: "no grant allows write to " + p + " through tool fs_write",
	}
}

// scanAll returns every record of the log at path.
func scanAll(t testing.TB, path string) []audit.Record {
	t.Helper()
	var recs []audit.Record
	if err := audit.Scan(path, func(r audit.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

// total is the refusals records stand for.
func total(recs []audit.Record) int {
	n := 0
	for _, r := range recs {
		n += max(r.Count, 1)
	}
	return n
}

// TestBurstsGroupRefusals: 2,000 refusals of one rule on 100 paths from
// one identity, from 8 goroutines, are BurstFirst+1 records (the first
// ones at once, the rest with their count and their distinct paths up to
// MaxPaths);
// another identity and another rule have bursts of their own; allowed
// calls and the refusals of a caller without a credential pass through
// one by one; the counts add up to every refusal.
func TestBurstsGroupRefusals(t *testing.T) {
	for _, tt := range []struct {
		name  string
		close bool // Close before the window ends
	}{{"window ends", false}, {"closed", true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, path := newLog(t, nil)
			window := 3 * time.Second
			if tt.close {
				window = time.Hour
			}
			b := audit.NewBursts(l, window, nil)
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := w; i < 2000; i += 8 {
						if err := b.Append(denial("http:token/a", fmt.Sprintf("/b/f%03d", i%100))); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			other := denial("http:token/b", "/b/f000")
			allowed := record(1)
			rule := denial("http:token/a", "/c")
			rule.Reason = "the server's policy denies /c"
			local := denial("http:127.0.0.1", "/b/f000")
			local.Auth = ""
			for _, r := range []*audit.Record{other, allowed, allowed, rule, local, local} {
				if err := b.Append(r); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := len(scanAll(t, path)), audit.BurstFirst+6; got != want {
				t.Fatalf("%d records before the window ends; want %d (the first refusals of each burst, two allowed calls, two refusals of a local caller)", got, want)
			}
			if tt.close {
				b.Close()
			} else {
				deadline := time.Now().Add(10 * time.Second)
				for len(scanAll(t, path)) < audit.BurstFirst+7 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
			}
			recs := scanAll(t, path)
			if len(recs) != audit.BurstFirst+7 {
				t.Fatalf("%d records; want %d", len(recs), audit.BurstFirst+7)
			}
			sum := recs[len(recs)-1]
			// Each path is named 20 times, some of them by the refusals
			// written at once. Namings of paths not listed are counted.
			first := map[string]int{}
			for _, r := range recs[:len(recs)-1] {
				if r.Identity == "http:token/a" && strings.HasPrefix(r.Paths[0], "/b/") {
					first[r.Paths[0]]++
				}
			}
			in := 2000 - audit.BurstFirst
			listed := 0
			for _, p := range sum.Paths {
				listed += 20 - first[p]
			}
			if sum.Identity != "http:token/a" || sum.Count != in || len(sum.Paths) != audit.MaxPaths || sum.MorePaths != in-listed {
				t.Errorf("the burst's record: identity %s count %d, %d paths + %d more; want token/a, %d, %d + %d",
					sum.Identity, sum.Count, len(sum.Paths), sum.MorePaths, in, audit.MaxPaths, in-listed)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(sum.Paths)))) != len(sum.Paths) {
				t.Errorf("the burst's paths repeat one: %v", sum.Paths)
			}
			if got := total(recs) - 2; got != 2000+1+1+2 {
				t.Errorf("the records stand for %d refusals; want %d", got, 2004)
			}
			b.Close()
			if err := b.Append(denial("http:token/a", "/b/late")); err != nil {
				t.Fatal(err)
			}
			if got, want := len(scanAll(t, path)), audit.BurstFirst+8; got != want {
				t.Errorf("%d records after Close and one more refusal; want %d (passed on at once)", got, want)
			}
		})
	}
}

// TestBurstsBounded: a caller that makes every refusal different (a new
// tool name each time) still writes at most its bound of bursts per
// window, each with its first records and one summing record.
func TestBurstsBounded(t *testing.T) {
	t.Parallel()
	l, path := newLog(t, nil)
	b := audit.NewBursts(l, time.Hour, nil)
	for i := range 1000 {
		r := denial("http:token/a", "/x")
		r.Tool, r.Reason = fmt.Sprintf("made_up_%d", i), fmt.Sprintf("no such tool made_up_%d", i)
		if err := b.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	recs := scanAll(t, path)
	if len(recs) > 9*(audit.BurstFirst+1) || total(recs) != 1000 {
		t.Errorf("%d records standing for %d refusals; want at most %d for 1000", len(recs), total(recs), 9*(audit.BurstFirst+1))
	}
}
