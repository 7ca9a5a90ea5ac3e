package nats_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/storetest"
)

// TestQuotaTwoHosts: each host counts what the other wrote, from the
// records it applies, and refuses a write the other's content takes over
// the quota; a host opened later counts everything as it replays.
func TestQuotaTwoHosts(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	cfg := storetest.Config{Quotas: []store.Quota{{Prefix: "/a", Bytes: 100}}}
	one, two := openPrefix(t, c, cfg, "quota"), openPrefix(t, c, cfg, "quota")
	ctx := t.Context()
	if _, err := one.Put(ctx, store.PutRequest{Path: "/a/x", Data: make([]byte, 80)}); err != nil {
		t.Fatal(err)
	}
	if err := two.(*nats.Store).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := []store.QuotaUse{{Prefix: "/a", Limit: 100, Charged: 80}}
	if got, err := two.(store.Quotas).Quotas(ctx); err != nil || !slices.Equal(got, want) {
		t.Errorf("the other host's Quotas: %+v, %v; want %+v", got, err, want)
	}
	_, err := two.Put(ctx, store.PutRequest{Path: "/a/y", Data: make([]byte, 30)})
	if qe, ok := errors.AsType[*store.QuotaError](err); !ok || qe.Charged != 80 {
		t.Errorf("the other host's write over the quota: %v", err)
	}
	three := openPrefix(t, c, cfg, "quota")
	if got, err := three.(store.Quotas).Quotas(ctx); err != nil || !slices.Equal(got, want) {
		t.Errorf("a host opened later: %+v, %v; want %+v", got, err, want)
	}
}
