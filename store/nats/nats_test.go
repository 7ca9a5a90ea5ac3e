package nats_test

import (
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/depotfs/depotfs/store/storetest"
)

// depots numbers the depots the tests create, so each gets its own
// buckets in the shared cluster.
var depots atomic.Int64

func openIn(t *testing.T, c *natstest.Cluster, cfg storetest.Config) store.Store {
	t.Helper()
	return openPrefix(t, c, cfg, fmt.Sprintf("t%d", depots.Add(1)))
}

// TestStoreConformanceSmallChunks runs the suite with no inline content
// and 16 KiB chunks, so content goes through the chunk stream and reads
// cross chunk boundaries.
func TestStoreConformanceSmallChunks(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	storetest.RunAll(t, func(t *testing.T, cfg storetest.Config) store.Store {
		return openWith(t, c, cfg, fmt.Sprintf("t%d", depots.Add(1)), smallChunks(cfg, nats.Options{InlineBytes: -1, MaxChunkSize: 16 << 10}))
	})
}

// smallChunks returns o, whose chunks are artificially small, with the
// default chunk size for the subtests that store files of several MiB
// (cfg.BigContent): 16 KiB chunks made each of their files hundreds of
// chunks, and those subtests took about twice as long as with the
// default size, crossing no boundary the other subtests do not.
func smallChunks(cfg storetest.Config, o nats.Options) nats.Options {
	if cfg.BigContent {
		o.MaxChunkSize = 0
	}
	return o
}

// openPrefix opens the depot named prefix in c as one more host.
func openPrefix(t testing.TB, c *natstest.Cluster, cfg storetest.Config, prefix string) store.Store {
	t.Helper()
	return openWith(t, c, cfg, prefix, nats.Options{})
}

// openWith is openPrefix with base's other options.
func openWith(t testing.TB, c *natstest.Cluster, cfg storetest.Config, prefix string, base nats.Options) store.Store {
	t.Helper()
	o := base
	o.Prefix, o.MaxStoreBytes, o.MaxFileBytes, o.Now, o.KeepVersions = prefix, cfg.MaxStoreBytes, cfg.MaxFileBytes, cfg.Now, cfg.KeepVersions
	o.Quotas, o.History = cfg.Quotas, cfg.History
	if isShared(c) && o.Timeout == 0 {
		o.Timeout = sharedTimeout
	}
	dropAtCleanup(t, c, prefix)
	s, err := nats.Open(t.Context(), c.Connect(t), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreConformance(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	t.Run("One", func(t *testing.T) {
		storetest.RunAll(t, func(t *testing.T, cfg storetest.Config) store.Store { return openIn(t, c, cfg) })
	})
	// Two hosts: two stores on one depot, each with its own connection.
	t.Run("Shared", func(t *testing.T) {
		storetest.RunShared(t, func(t *testing.T, cfg storetest.Config) (store.Store, store.Store) {
			prefix := fmt.Sprintf("t%d", depots.Add(1))
			return openPrefix(t, c, cfg, prefix), openPrefix(t, c, cfg, prefix)
		})
	})
	// Opened again: each opening is one more host of the depot.
	t.Run("Reopen", func(t *testing.T) {
		storetest.RunReopen(t, func(t *testing.T) func(cfg storetest.Config) store.Store {
			prefix := fmt.Sprintf("t%d", depots.Add(1))
			return func(cfg storetest.Config) store.Store { return openPrefix(t, c, cfg, prefix) }
		})
	})
}

// soak is DEPOTFS_SOAK=1, the switch of the test suite's long versions:
// here the Jepsen run and the close-to-open count.
var soak = os.Getenv("DEPOTFS_SOAK") != ""

// defaultParallel is how many tests run at once unless -parallel says
// otherwise. Most of the tests that kill or pause servers wait for
// elections and time limits rather than on a core, so go test's default
// (one per core) queued those waits one after the other behind the
// conformance suites.
const defaultParallel = 8

func TestMain(m *testing.M) {
	natstest.Main()
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", fmt.Sprint(defaultParallel))
	}
	code := m.Run()
	stopShared()
	os.Exit(code)
}
