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
	s, err := nats.Open(t.Context(), c.Connect(t), &nats.Options{
		Prefix:        fmt.Sprintf("t%d", depots.Add(1)),
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
	storetest.RunAll(t, func(t *testing.T, cfg storetest.Config) store.Store { return openIn(t, c, cfg) })
}

func TestMain(m *testing.M) {
	natstest.Main()
	os.Exit(m.Run())
}
