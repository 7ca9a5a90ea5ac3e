package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// Config is how the suite wants a store opened: with these limits and this
// clock.
type Config struct {
	// MaxStoreBytes and MaxFileBytes are the store's size limits, as in
	// store.Stats; 0 means none.
	MaxStoreBytes, MaxFileBytes int64
	// KeepVersions is how many superseded versions of each path the
	// store keeps (its Options.KeepVersions); 0 keeps none.
	KeepVersions int
	// Quotas are the store's quotas (see store.Quota); a store that keeps
	// none (no store.Quotas) skips the subtest that sets them.
	Quotas []store.Quota
	// Now is the store's clock (arrival times, expiry); nil means the
	// implementation's default, the real time.
	Now func() time.Time
	// History is how many changes the store keeps for Changes and Watch
	// (its Options.History); 0 means its default.
	History int
	// BigContent is set for the subtests that store files of several MiB.
	// An implementation under test with artificially small chunks (to
	// make reads cross chunk boundaries) may use its normal chunk size
	// there: millions of tiny chunks only make the suite slow.
	BigContent bool
}

// Opener opens a new, empty store configured by cfg and registers its
// Close with t.Cleanup (the suite may close it first; Close must be
// idempotent).
type Opener func(t *testing.T, cfg Config) store.Store

// Expirer is implemented by stores whose expiry can be run on demand: it
// removes what has expired by the store's clock and returns how many
// entries it removed. The suite uses it, when the store has it, instead of
// waiting for a background sweep.
type Expirer interface {
	ExpireEntries(ctx context.Context) (int, error)
}

// RunAll runs the whole conformance suite: every subtest of Run, with
// stores opened with a zero Config, and the subtests that need limits or
// a controlled clock: Limits, Eviction, Expiry, Stats, DirTimes, SnapshotDirTimes, PutBatch, (for a store.Streamer) PutStream and PutStreams, (for a store.UploadAdmin) UploadAdmin, Versions, Quota and Changes. Each subtest
// opens its own store.
func RunAll(t *testing.T, open Opener) {
	Run(t, func(t *testing.T) store.Store { return open(t, Config{}) })
	t.Run("Limits", func(t *testing.T) { testLimits(t, open) })
	t.Run("Eviction", func(t *testing.T) { testEviction(t, open) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, open) })
	t.Run("Stats", func(t *testing.T) { testStats(t, open) })
	t.Run("DirTimes", func(t *testing.T) { testDirTimes(t, open) })
	t.Run("SnapshotDirTimes", func(t *testing.T) { testSnapshotDirTimes(t, open) })
	t.Run("PutBatch", func(t *testing.T) { testPutBatch(t, open) })
	t.Run("PutStream", func(t *testing.T) { testPutStream(t, open) })
	t.Run("PutStreams", func(t *testing.T) { testPutStreams(t, open) })
	t.Run("UploadAdmin", func(t *testing.T) { testUploadAdmin(t, open) })
	t.Run("Versions", func(t *testing.T) { testVersions(t, open) })
	t.Run("Quota", func(t *testing.T) { testQuota(t, open) })
	t.Run("Changes", func(t *testing.T) { testChanges(t, open) })
}

// Run runs the part of the conformance suite that needs no configuration
// against the stores open returns (RunAll runs it all). open must return a
// new, empty store and register its Close with t.Cleanup (the suite may
// close it first; Close must be idempotent). Each subtest opens its own
// store. Run is meant to be called from a test function of the
// implementation's package; subtests do not run in parallel, and the
// Concurrency subtest drives the store from many goroutines.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Paths", func(t *testing.T) { testPaths(t, open) })
	t.Run("Stat", func(t *testing.T) { testStat(t, open) })
	t.Run("ReadDir", func(t *testing.T) { testReadDir(t, open) })
	t.Run("Put", func(t *testing.T) { testPut(t, open) })
	t.Run("Open", func(t *testing.T) { testOpen(t, open) })
	t.Run("Remove", func(t *testing.T) { testRemove(t, open) })
	t.Run("Copy", func(t *testing.T) { testCopy(t, open) })
	t.Run("Move", func(t *testing.T) { testMove(t, open) })
	t.Run("Declare", func(t *testing.T) { testDeclare(t, open) })
	t.Run("PutChunk", func(t *testing.T) { testPutChunk(t, open) })
	t.Run("Revision", func(t *testing.T) { testRevision(t, open) })
	t.Run("Watch", func(t *testing.T) { testWatch(t, open) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, open) })
	t.Run("TreeRaces", func(t *testing.T) { testTreeRaces(t, open) })
	t.Run("ConditionalWrites", func(t *testing.T) { testConditionalWrites(t, open) })
	t.Run("Close", func(t *testing.T) { testClose(t, open) })
}

// Sum returns the lowercase hex SHA-256 of b. It is safe for concurrent use.
func Sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// waitTimeout bounds every wait for an event.
const waitTimeout = 10 * time.Second

// hangTimeout bounds all the store calls of one subtest together (see
// withinDeadline): a detector of calls that never return, not a measure
// of speed, so it leaves room for a subtest of many commits on a loaded
// machine under -race, where 10 s was not enough for some.
const hangTimeout = 2 * time.Minute

func put(t testing.TB, s store.Store, p string, data []byte) store.PutResult {
	t.Helper()
	res, err := s.Put(t.Context(), store.PutRequest{Path: p, Data: data})
	if err != nil {
		t.Fatalf("Put(%s): %v", p, err)
	}
	return res
}

func stat(t testing.TB, s store.Store, p string) store.Entry {
	t.Helper()
	e, err := s.Stat(t.Context(), p)
	if err != nil {
		t.Fatalf("Stat(%s): %v", p, err)
	}
	return e
}

func revision(t testing.TB, s store.Store) uint64 {
	t.Helper()
	r, err := s.Revision(t.Context())
	if err != nil {
		t.Fatalf("Revision: %v", err)
	}
	return r
}

// read returns the whole content at p, read through one Content.
func read(t testing.TB, s store.Store, p string) []byte {
	t.Helper()
	c, err := s.Open(t.Context(), p)
	if err != nil {
		t.Fatalf("Open(%s): %v", p, err)
	}
	defer c.Close()
	return readContent(t, c)
}

func readContent(t testing.TB, c store.Content) []byte {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
	if err != nil {
		t.Fatalf("reading content: %v", err)
	}
	if got := Sum(b); got != c.SHA256() {
		t.Fatalf("content hashes to %s, Content.SHA256 says %s", got, c.SHA256())
	}
	return b
}

// wantErr fails unless err wraps want and is an *fs.PathError.
func wantErr(t testing.TB, what string, err, want error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %v", what, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want one wrapping %v", what, err, want)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Errorf("%s: error %v (%T) is not an *fs.PathError", what, err, err)
	}
}

// state is everything a client can see of the namespace.
type state struct {
	rev     uint64
	entries []store.Entry
}

// snapshot walks the whole tree.
func snapshot(t testing.TB, s store.Store) state {
	t.Helper()
	st := state{rev: revision(t, s)}
	var walk func(dir string)
	walk = func(dir string) {
		es, err := s.ReadDir(t.Context(), dir)
		if err != nil {
			t.Fatalf("ReadDir(%s): %v", dir, err)
		}
		for _, e := range es {
			st.entries = append(st.entries, e)
			if e.IsDir() {
				walk(e.Path)
			}
		}
	}
	walk("/")
	return st
}

// unchanged fails if the store differs from before.
func unchanged(t testing.TB, s store.Store, before state) {
	t.Helper()
	after := snapshot(t, s)
	if after.rev != before.rev {
		t.Errorf("revision moved from %d to %d after a rejected call", before.rev, after.rev)
	}
	if !slices.EqualFunc(after.entries, before.entries, sameEntry) {
		t.Errorf("tree changed after a rejected call:\nbefore %+v\nafter  %+v", before.entries, after.entries)
	}
}

// refusal snapshots the store before a call that must be refused; the
// returned check fails the test if the call changed the tree, the
// revision or the content counted in the stats.
func refusal(t testing.TB, s store.Store) (check func()) {
	t.Helper()
	before, st := snapshot(t, s), stats(t, s)
	return func() {
		t.Helper()
		unchanged(t, s, before)
		if got := stats(t, s); !sameContentStats(st, got) {
			t.Errorf("stats changed after a rejected call: %+v, then %+v", st, got)
		}
	}
}

// paths returns the paths of es.
func paths(es []store.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Path
	}
	return out
}

// withinDeadline is a context for the operations of one test that must
// not hang.
func withinDeadline(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), hangTimeout)
	t.Cleanup(cancel)
	return ctx
}

// sameEntry compares entries, times by instant.
func sameEntry(a, b store.Entry) bool {
	ta := []time.Time{a.MTime, a.Created, a.Updated, a.Expires}
	tb := []time.Time{b.MTime, b.Created, b.Updated, b.Expires}
	for i := range ta {
		if !ta[i].Equal(tb[i]) {
			return false
		}
	}
	a.MTime, a.Created, a.Updated, a.Expires = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	b.MTime, b.Created, b.Updated, b.Expires = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}
