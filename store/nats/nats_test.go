package nats_test

import (
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

// openPrefix opens the depot named prefix in c as one more host.
func openPrefix(t *testing.T, c *natstest.Cluster, cfg storetest.Config, prefix string) store.Store {
	t.Helper()
	s, err := nats.Open(t.Context(), c.Connect(t), &nats.Options{
		Prefix:        prefix,
		MaxStoreBytes: cfg.MaxStoreBytes,
		MaxFileBytes:  cfg.MaxFileBytes,
		Now:           cfg.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreConformance(t *testing.T) {
	c := natstest.Start(t, 3)
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
}

func TestMain(m *testing.M) {
	natstest.Main()
	os.Exit(m.Run())
}
