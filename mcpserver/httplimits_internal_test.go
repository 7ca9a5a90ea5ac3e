package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestBudget: acquisitions that fit pass at once, others wait in order
// and are granted on release; a wait that outlasts its limit, or whose
// client has gone, fails and takes nothing; a request larger than the
// budget waits for all of it.
func TestBudget(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	if err := b.acquire(ctx, 60, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(ctx, 60, 20*time.Millisecond); err == nil {
		t.Fatal("60 more bytes fit in a budget of 100 holding 60")
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 500, 5*time.Second) }() // more than the budget: all of it
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("granted while the budget was held: %v", err)
	default:
	}
	b.release(60)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if b.sem.TryAcquire(1) {
		t.Fatal("the budget had room after granting an oversized request; want it all taken")
	}
	b.release(500)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.acquire(cctx, 10, time.Second); err == nil {
		t.Fatal("a request whose client has gone was granted")
	}
	if !b.sem.TryAcquire(100) {
		t.Fatal("budget not back to empty")
	}
}

// TestSessions: issued ids validate, dropped ones are terminated (404),
// unknown ones are errors; the caps count live and reserved sessions, in
// all and per identity, and a dropped session frees its identity's place.
func TestSessions(t *testing.T) {
	m := newSessions(3, 2, time.Minute)
	take := func(key string) (string, error) {
		if err := m.reserve(key); err != nil {
			return "", err
		}
		id := m.Generate()
		m.own(id, key)
		return id, nil
	}
	a, _ := take("alice")
	b, _ := take("alice")
	if a == b || !strings.HasPrefix(a, sessionPrefix) {
		t.Fatalf("ids %q %q", a, b)
	}
	if term, err := m.Validate(a); term || err != nil {
		t.Fatalf("Validate(live) = %v, %v", term, err)
	}
	if _, err := take("alice"); !errors.Is(err, errIdentitySessionsFull) {
		t.Fatalf("alice's third session: %v; want her limit", err)
	}
	if _, err := take("bob"); err != nil {
		t.Fatalf("bob's first session while alice is at her limit: %v", err)
	}
	if err := m.reserve("carol"); !errors.Is(err, errSessionsFull) {
		t.Fatalf("a fourth session of three: %v; want the server's limit", err)
	}
	m.Terminate(a)
	if term, err := m.Validate(a); !term || err != nil {
		t.Fatalf("Validate(dropped) = %v, %v; want terminated", term, err)
	}
	if _, err := m.Validate("depotfs-session-unknown"); err == nil {
		t.Fatal("an unknown id validated")
	}
	if held, _ := m.count("alice"); held != 1 {
		t.Fatalf("alice holds %d after one of her two was dropped", held)
	}
	if err := m.reserve("carol"); err != nil {
		t.Fatalf("a session after one was dropped: %v", err)
	}
	m.unreserve("carol")
	if held, _ := m.count("carol"); held != 0 || m.pending != 0 {
		t.Fatalf("carol holds %d, %d pending, after giving her place back", held, m.pending)
	}
}

// TestFirstByte and isInitialize read only the start of a body.
func TestFirstByte(t *testing.T) {
	for body, want := range map[string]byte{" \n\t[{}]": '[', `{"a":1}`: '{', "   ": 0} {
		if got, _ := firstByte(bufio.NewReader(strings.NewReader(body))); got != want {
			t.Errorf("firstByte(%q) = %q, want %q", body, got, want)
		}
	}
	if !isInitialize([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)) || isInitialize([]byte(`{"method":"tools/list"}`)) {
		t.Error("isInitialize")
	}
	if !isInitialize([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"x` /* cut */)) {
		t.Error("isInitialize of a cut body")
	}
}
