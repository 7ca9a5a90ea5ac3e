package nats_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/depotfs/depotfs/store/storetest"
)

// op is one client operation of TestJepsen's history.
type op struct {
	client     int
	file       string
	append     bool   // an append; otherwise a conditional write of a register
	value      string // the register's new value, or the appended line
	ifRev      uint64 // the revision the write was conditional on
	rev        uint64 // the revision an acknowledged write reported
	start, end time.Time
	outcome    outcome
	err        error // of an unknown outcome
}

type outcome int

const (
	acked   outcome = iota
	refused         // a definite failure: the change was not made (lost a race)
	unknown         // the cluster could not say in time (store.ErrUnavailable)
)

// TestJepsen runs clients on three hosts doing conditional writes
// (registers) and appends (logs) while a nemesis kills, pauses (SIGSTOP)
// and restarts NATS servers, two at a time now and then (quorum loss).
// At the end, with every server back, a checker verifies on every host:
// each register's acknowledged writes form one chain of revisions
// (linearizable compare-and-set: no two acknowledged writes on the same
// revision, none ordered against real time, the final value the last
// write's), and each log holds every acknowledged append exactly once and
// nothing that was refused. DEPOTFS_JEPSEN sets the duration of the faults
// (15s by default, a minute with DEPOTFS_SOAK=1).
func TestJepsen(t *testing.T) {
	t.Parallel()
	dur := 15 * time.Second
	if soak {
		dur = time.Minute
	}
	if v, err := time.ParseDuration(os.Getenv("DEPOTFS_JEPSEN")); err == nil && v > 0 {
		dur = v
	}
	c := natstest.Start(t, 3)
	prefix := fmt.Sprintf("j%d", depots.Add(1))
	hosts := hostsOf(t, c, prefix, 3)
	registers := []string{"/j/r0", "/j/r1", "/j/r2"}
	logs := []string{"/j/log0", "/j/log1"}
	for _, p := range append(registers, logs...) {
		if _, err := hosts[0].Put(t.Context(), store.PutRequest{Path: p, Data: []byte{}}); err != nil {
			t.Fatal(err)
		}
	}
	initial := map[string]uint64{}
	for _, p := range registers {
		initial[p] = stat(t, hosts[0], p).Revision
	}

	var mu sync.Mutex
	var history []op
	stop := make(chan struct{})
	var clients sync.WaitGroup
	for cl := range 6 {
		s := hosts[cl%3]
		rng := rand.New(rand.NewPCG(uint64(cl), 42))
		clients.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				o := op{client: cl, append: rng.IntN(2) == 0}
				if o.append {
					o.file = logs[rng.IntN(len(logs))]
					o.value = fmt.Sprintf("c%d-%d", cl, i)
				} else {
					o.file = registers[rng.IntN(len(registers))]
					o.value = fmt.Sprintf("c%d-%d", cl, i)
				}
				jepsenOp(s, &o)
				mu.Lock()
				history = append(history, o)
				mu.Unlock()
			}
		})
	}

	// The nemesis.
	rng := rand.New(rand.NewPCG(7, 7))
	var faults []string
	end := time.Now().Add(dur)
	for time.Now().Before(end) {
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
		i := rng.IntN(3)
		hold := time.Duration(1000+rng.IntN(2000)) * time.Millisecond
		switch rng.IntN(4) {
		case 0:
			c.Kill(i)
			time.Sleep(hold)
			c.Restart(i)
			faults = append(faults, fmt.Sprintf("kill n%d %v", i+1, hold))
		case 1:
			c.Pause(i)
			time.Sleep(hold)
			c.Resume(i)
			faults = append(faults, fmt.Sprintf("pause n%d %v", i+1, hold))
		case 2:
			j := (i + 1) % 3
			c.Kill(i)
			c.Kill(j)
			time.Sleep(hold)
			c.Restart(i)
			c.Restart(j)
			faults = append(faults, fmt.Sprintf("kill n%d+n%d %v", i+1, j+1, hold))
		case 3:
			j := (i + 1) % 3
			c.Pause(i)
			c.Pause(j)
			time.Sleep(hold)
			c.Resume(i)
			c.Resume(j)
			faults = append(faults, fmt.Sprintf("pause n%d+n%d %v", i+1, j+1, hold))
		}
	}
	close(stop)
	clients.Wait()

	n := map[outcome]int{}
	for _, o := range history {
		n[o.outcome]++
	}
	var anomalies []string
	for h, s := range hosts {
		if err := s.(storetest.Syncer).Sync(t.Context()); err != nil {
			t.Fatalf("host %d: %v", h, err)
		}
		for _, p := range registers {
			anomalies = append(anomalies, checkRegister(t, s, h, p, initial[p], history)...)
		}
		for _, p := range logs {
			anomalies = append(anomalies, checkLog(t, s, h, p, history)...)
		}
	}
	t.Logf("%d operations (%d acknowledged, %d refused as lost races, %d unknown), %d faults (%s); %d anomalies",
		len(history), n[acked], n[refused], n[unknown], len(faults), strings.Join(faults, ", "), len(anomalies))
	shown := 0
	for _, o := range history {
		if o.outcome == unknown && shown < 5 {
			t.Logf("unknown outcome: %s %q after %v: %v", o.file, o.value, o.end.Sub(o.start).Round(time.Millisecond), o.err)
			shown++
		}
	}
	for _, a := range anomalies {
		t.Error(a)
	}
	if n[acked] < 50 {
		t.Errorf("only %d operations acknowledged: the run checked too little", n[acked])
	}
}

// jepsenOp runs o on s: a register write conditional on the revision
// read, or an append (read, then write conditional on that revision).
func jepsenOp(s store.Store, o *op) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o.start = time.Now()
	defer func() { o.end = time.Now() }()
	e, err := s.Stat(ctx, o.file)
	if err != nil {
		o.outcome = refused
		return
	}
	data := []byte(o.value)
	if o.append {
		old, err := readOnce(s, o.file)
		if err != nil {
			o.outcome = refused
			return
		}
		data = append(old, o.value+"\n"...)
	}
	o.ifRev = e.Revision
	r, err := s.Put(ctx, store.PutRequest{Path: o.file, Data: data, IfRevision: e.Revision})
	switch {
	case err == nil:
		o.outcome, o.rev = acked, r.Entry.Revision
	case errors.Is(err, store.ErrRevision):
		o.outcome = refused
	default:
		o.outcome, o.err = unknown, err
	}
}

// checkRegister checks p on host h against the history.
func checkRegister(t *testing.T, s store.Store, h int, p string, initial uint64, history []op) []string {
	var bad []string
	byIf := map[uint64]op{}
	var writes []op
	unknowns := 0
	for _, o := range history {
		if o.file != p || o.append {
			continue
		}
		switch o.outcome {
		case acked:
			if prev, dup := byIf[o.ifRev]; dup {
				bad = append(bad, fmt.Sprintf("%s: %s and %s were both acknowledged on revision %d (a lost update)", p, prev.value, o.value, o.ifRev))
			}
			byIf[o.ifRev] = o
			writes = append(writes, o)
		case unknown:
			unknowns++
		}
	}
	// Walk the chain of acknowledged writes from the initial revision.
	rev, last, walked := initial, "", 0
	var prev *op
	for {
		o, ok := byIf[rev]
		if !ok {
			break
		}
		if prev != nil && o.end.Before(prev.start) {
			bad = append(bad, fmt.Sprintf("%s: %s follows %s in the chain but finished before it started", p, o.value, prev.value))
		}
		prev = &o
		rev, last, walked = o.rev, o.value, walked+1
	}
	if walked != len(writes) && unknowns == 0 {
		bad = append(bad, fmt.Sprintf("%s: %d acknowledged writes, %d form the chain from revision %d", p, len(writes), walked, initial))
	}
	got := string(readAll(t, s, p))
	if walked == len(writes) && got != last && unknowns == 0 {
		bad = append(bad, fmt.Sprintf("%s on host %d holds %q, the last acknowledged write is %q", p, h, got, last))
	}
	return bad
}

// checkLog checks p on host h: every acknowledged append once, nothing
// refused, nothing twice.
func checkLog(t *testing.T, s store.Store, h int, p string, history []op) []string {
	var bad []string
	count := map[string]int{}
	for _, l := range bytes.Split(readAll(t, s, p), []byte("\n")) {
		if len(l) > 0 {
			count[string(l)]++
		}
	}
	for line, n := range count {
		if n > 1 {
			bad = append(bad, fmt.Sprintf("%s on host %d: %q appears %d times", p, h, line, n))
		}
	}
	for _, o := range history {
		if o.file != p || !o.append {
			continue
		}
		switch {
		case o.outcome == acked && count[o.value] != 1:
			bad = append(bad, fmt.Sprintf("%s on host %d: acknowledged append %q appears %d times", p, h, o.value, count[o.value]))
		case o.outcome == refused && count[o.value] != 0:
			bad = append(bad, fmt.Sprintf("%s on host %d: refused append %q is there", p, h, o.value))
		}
	}
	return bad
}
