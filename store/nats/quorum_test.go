package nats_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/depotfs/depotfs/store/storetest"
	"github.com/nats-io/nats.go/jetstream"
)

// host is one Store of a depot, as one depotfs host opens it.
func hostsOf(t *testing.T, c *natstest.Cluster, prefix string, n int) []store.Store {
	t.Helper()
	var hs []store.Store
	for range n {
		hs = append(hs, openPrefix(t, c, storetest.Config{}, prefix))
	}
	return hs
}

// treeStream is the name of the stream behind a depot's tree bucket.
func treeStream(prefix string) string { return "KV_" + prefix + "-tree" }

// leaderOf returns the index of the node leading stream, -1 when none.
func leaderOf(t *testing.T, c *natstest.Cluster, js jetstream.JetStream, stream string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return -1
	}
	for i, nd := range c.Nodes {
		if st.CachedInfo().Cluster != nil && nd.Name == st.CachedInfo().Cluster.Leader {
			return i
		}
	}
	return -1
}

// moveLeader makes node i the leader of stream.
func moveLeader(t *testing.T, c *natstest.Cluster, stream string, i int) {
	t.Helper()
	nc := c.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for leaderOf(t, c, js, stream) != i {
		if time.Now().After(deadline) {
			t.Fatalf("%s: node %d did not become its leader", stream, i)
		}
		req, _ := json.Marshal(map[string]any{"placement": map[string]any{"preferred": c.Nodes[i].Name}})
		nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, req, 2*time.Second)
		time.Sleep(200 * time.Millisecond)
	}
}

// outcome is what a write call answered, and what it should leave on
// every host when it succeeded.
type quorumCase struct {
	name  string
	setup func(t *testing.T, s store.Store)
	// call sends the write; it returns the revision the answer reports
	// for path (0 when the answer has none).
	call func(ctx context.Context, s store.Store) (uint64, error)
	// check verifies one host's state after a successful call whose
	// answer reported rev.
	check func(t *testing.T, s store.Store, rev uint64)
}

func stat(t *testing.T, s store.Store, p string) store.Entry {
	t.Helper()
	e, err := s.Stat(t.Context(), p)
	if err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	return e
}

func readAll(t *testing.T, s store.Store, p string) []byte {
	t.Helper()
	c, err := s.Open(t.Context(), p)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer c.Close()
	b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func absent(t *testing.T, s store.Store, p string) {
	t.Helper()
	if _, err := s.Stat(t.Context(), p); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("%s: %v, want it absent", p, err)
	}
}

// same checks that p holds want, written once: its revision is the one
// the answer reported and its content was replaced updates times.
func same(t *testing.T, s store.Store, p string, want []byte, rev, updates uint64) {
	t.Helper()
	e := stat(t, s, p)
	if got := readAll(t, s, p); !bytes.Equal(got, want) {
		t.Errorf("%s holds %q, want %q", p, got, want)
	}
	if rev != 0 && e.Revision != rev {
		t.Errorf("%s at revision %d, the answer said %d: the change was applied again", p, e.Revision, rev)
	}
	if e.Updates != updates {
		t.Errorf("%s updated %d times, want %d", p, e.Updates, updates)
	}
}

func quorumCases() []quorumCase {
	put := func(ctx context.Context, s store.Store, req store.PutRequest) (uint64, error) {
		r, err := s.Put(ctx, req)
		return r.Entry.Revision, err
	}
	seed := func(t *testing.T, s store.Store, p, data string) {
		t.Helper()
		if _, err := s.Put(t.Context(), store.PutRequest{Path: p, Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	chunk := []byte("second half\n")
	whole := append([]byte("first half\n"), chunk...)
	sum := sha256.Sum256(whole)
	return []quorumCase{
		{
			name:  "put",
			setup: func(t *testing.T, s store.Store) { seed(t, s, "/f", "v1\n") },
			call: func(ctx context.Context, s store.Store) (uint64, error) {
				return put(ctx, s, store.PutRequest{Path: "/f", Data: []byte("v2\n")})
			},
			check: func(t *testing.T, s store.Store, rev uint64) { same(t, s, "/f", []byte("v2\n"), rev, 1) },
		},
		{
			name: "batch",
			call: func(ctx context.Context, s store.Store) (uint64, error) {
				rs, err := s.PutBatch(ctx, []store.PutRequest{{Path: "/b/1", Data: []byte("one\n")}, {Path: "/b/2", Data: []byte("two\n")}})
				if err != nil {
					return 0, err
				}
				return rs[1].Entry.Revision, nil
			},
			check: func(t *testing.T, s store.Store, rev uint64) {
				same(t, s, "/b/1", []byte("one\n"), 0, 0)
				same(t, s, "/b/2", []byte("two\n"), rev, 0)
			},
		},
		{
			// An append as the fs tools do it: the new content on
			// condition that the file is still at the revision read.
			name:  "append",
			setup: func(t *testing.T, s store.Store) { seed(t, s, "/log", "line 1\n") },
			call: func(ctx context.Context, s store.Store) (uint64, error) {
				e, err := s.Stat(ctx, "/log")
				if err != nil {
					return 0, err
				}
				return put(ctx, s, store.PutRequest{Path: "/log", Data: []byte("line 1\nline 2\n"), IfRevision: e.Revision})
			},
			check: func(t *testing.T, s store.Store, rev uint64) { same(t, s, "/log", []byte("line 1\nline 2\n"), rev, 1) },
		},
		{
			name: "create-new",
			call: func(ctx context.Context, s store.Store) (uint64, error) {
				return put(ctx, s, store.PutRequest{Path: "/new", Data: []byte("mine\n"), IfAbsent: true})
			},
			check: func(t *testing.T, s store.Store, rev uint64) { same(t, s, "/new", []byte("mine\n"), rev, 0) },
		},
		{
			name:  "move",
			setup: func(t *testing.T, s store.Store) { seed(t, s, "/from", "moved\n") },
			call: func(ctx context.Context, s store.Store) (uint64, error) {
				r, err := s.Move(ctx, store.MoveRequest{From: "/from", To: "/to"})
				return r.Entry.Revision, err
			},
			check: func(t *testing.T, s store.Store, rev uint64) {
				absent(t, s, "/from")
				same(t, s, "/to", []byte("moved\n"), rev, 0)
			},
		},
		{
			name:  "remove",
			setup: func(t *testing.T, s store.Store) { seed(t, s, "/gone", "bye\n") },
			call: func(ctx context.Context, s store.Store) (uint64, error) {
				return 0, s.Remove(ctx, store.RemoveRequest{Path: "/gone"})
			},
			check: func(t *testing.T, s store.Store, _ uint64) { absent(t, s, "/gone") },
		},
		{
			// The chunk that completes an upload commits the file.
			name: "upload completion",
			setup: func(t *testing.T, s store.Store) {
				if _, err := s.PutChunk(t.Context(), store.Chunk{UploadID: "u1", Index: 0, Count: 2, Data: []byte("first half\n"),
					TotalSize: int64(len(whole)), File: store.PutRequest{Path: "/up", SHA256: hex.EncodeToString(sum[:])}}); err != nil {
					t.Fatal(err)
				}
			},
			call: func(ctx context.Context, s store.Store) (uint64, error) {
				p, err := s.PutChunk(ctx, store.Chunk{UploadID: "u1", Index: 1, Count: 2, Data: chunk,
					TotalSize: int64(len(whole)), File: store.PutRequest{Path: "/up", SHA256: hex.EncodeToString(sum[:])}})
				if err == nil && !p.Complete {
					return 0, fmt.Errorf("the last chunk did not complete the upload: %+v", p)
				}
				return p.Result.Entry.Revision, err
			},
			check: func(t *testing.T, s store.Store, rev uint64) { same(t, s, "/up", whole, rev, 0) },
		},
	}
}

// TestQuorumLossExactlyOnce: with the two servers that do not lead the
// tree's stream killed, one write of each kind is sent (each to its own
// depot), and the servers come back 6.5 s later. Every write must then
// answer success, and every host must show its change exactly once: at
// the revision the answer reported, not applied a second time.
func TestQuorumLossExactlyOnce(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	cases := quorumCases()
	hosts := make([][]store.Store, len(cases))
	for i, tc := range cases {
		prefix := fmt.Sprintf("q%d", depots.Add(1))
		hosts[i] = hostsOf(t, c, prefix, 3)
		if tc.setup != nil {
			tc.setup(t, hosts[i][0])
		}
		moveLeader(t, c, treeStream(prefix), 0)
	}
	c.Kill(1)
	c.Kill(2)
	type answer struct {
		rev  uint64
		err  error
		took time.Duration
	}
	answers := make([]chan answer, len(cases))
	for i, tc := range cases {
		answers[i] = make(chan answer, 1)
		go func() {
			start := time.Now()
			rev, err := tc.call(context.Background(), hosts[i][1])
			answers[i] <- answer{rev, err, time.Since(start)}
		}()
	}
	time.Sleep(6500 * time.Millisecond) // the outage the call must ride out
	c.Restart(1)
	c.Restart(2)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a answer
			select {
			case a = <-answers[i]:
			case <-time.After(2 * nats.DefaultWriteTimeout):
				t.Fatal("no answer")
			}
			t.Logf("answered after %v: revision %d, %v", a.took.Round(time.Millisecond), a.rev, a.err)
			if a.err != nil {
				t.Fatalf("the write failed although the cluster recovered within its time limit: %v", a.err)
			}
			for h, s := range hosts[i] {
				if err := s.(storetest.Syncer).Sync(t.Context()); err != nil {
					t.Fatalf("host %d: %v", h, err)
				}
				tc.check(t, s, a.rev)
			}
		})
	}
}

// TestPingNeedsQuorum: Ping succeeds while the tree's stream can commit,
// fails within a watchdog interval's half once two of the three servers
// are gone (its leader included or not), and succeeds again once they
// are back.
func TestPingNeedsQuorum(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	prefix := fmt.Sprintf("q%d", depots.Add(1))
	s := openPrefix(t, c, storetest.Config{}, prefix).(*nats.Store)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("ping with every server up: %v", err)
	}
	moveLeader(t, c, treeStream(prefix), 0)
	c.Kill(1)
	c.Kill(2)
	start := time.Now()
	waitUntil(t, 15*time.Second, "ping to fail with two of three servers gone", func() bool { return s.Ping(t.Context()) != nil })
	t.Logf("ping failed %v after the kill", time.Since(start).Round(time.Millisecond))
	c.Restart(1)
	c.Restart(2)
	waitUntil(t, 30*time.Second, "ping to succeed again", func() bool { return s.Ping(t.Context()) == nil })
}

// waitUntil polls cond until it holds, failing t after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
