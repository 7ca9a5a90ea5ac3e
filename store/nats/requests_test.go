package nats_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/fetch"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/storetest"
)

// TestFetchAcrossHosts: readers on two hosts block on one placeholder;
// the third host's broker shows one request with both waiters; content
// written through that host reaches both readers.
func TestFetchAcrossHosts(t *testing.T) {
	c := sharedCluster(t)
	prefix := fmt.Sprintf("t%d", depots.Add(1))
	var brokers []*fetch.Broker
	var stores []store.Store
	for range 3 {
		s := openPrefix(t, c, storetest.Config{}, prefix)
		ex, err := s.(*nats.Store).Requests(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		b := fetch.New(s, &fetch.Options{Timeout: 30 * time.Second, Exchange: ex})
		t.Cleanup(func() { b.Close() })
		brokers, stores = append(brokers, b), append(stores, s)
	}
	if _, err := stores[0].Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/want", Kind: store.KindFile, Size: 5}}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range stores {
		if err := s.(storetest.Syncer).Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		data []byte
		err  error
	}
	got := make(chan result, 2)
	for _, b := range brokers[1:] {
		go func() {
			content, err := b.Fetch(t.Context(), "/want")
			if err != nil {
				got <- result{nil, err}
				return
			}
			defer content.Close()
			data, err := io.ReadAll(io.NewSectionReader(content, 0, content.Size()))
			got <- result{data, err}
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		p := brokers[0].Pending()
		if len(p.Requests) == 1 && p.Requests[0].Path == "/want" && p.Requests[0].Waiters == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("host 0's pending requests: %+v, want /want with 2 waiters", p.Requests)
		}
		select {
		case <-p.Changed:
		case <-time.After(time.Until(deadline)):
		}
	}
	if _, err := stores[0].Put(t.Context(), store.PutRequest{Path: "/want", Data: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := <-got
		if r.err != nil || !bytes.Equal(r.data, []byte("hello")) {
			t.Fatalf("a reader got %q, %v", r.data, r.err)
		}
	}
	deadline = time.Now().Add(20 * time.Second)
	for len(brokers[0].Pending().Requests) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("requests still pending on host 0: %+v", brokers[0].Pending().Requests)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
