package nats_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkChunks compares the two ways JetStream can hold content: a
// stream with one subject per chunk (what the store uses) and an Object
// Store, writing and reading one object of each size, on a 3-node cluster
// with replicas 3 and sync_interval: always.
//
//	go test ./store/nats -run '^$' -bench Chunks
func BenchmarkChunks(b *testing.B) {
	c := natstest.Start(b, 3)
	js, err := jetstream.New(c.Connect(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "bench-chunks", Subjects: []string{"bench-chunks.>"},
		Replicas: 3, MaxMsgsPerSubject: 1, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "bench-objects", Replicas: 3, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{4 << 10, 512 << 10} {
		data := bytes.Repeat([]byte{'x'}, size)
		b.Run(fmt.Sprintf("stream/put/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for i := range b.N {
				if _, err := js.Publish(ctx, fmt.Sprintf("bench-chunks.%d.%d", size, i), data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("stream/get/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for i := range b.N {
				if _, err := st.GetLastMsgForSubject(ctx, fmt.Sprintf("bench-chunks.%d.%d", size, i%100)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("objectstore/put/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for i := range b.N {
				if _, err := obs.PutBytes(ctx, fmt.Sprintf("o%d.%d", size, i), data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("objectstore/get/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for i := range b.N {
				if _, err := obs.GetBytes(ctx, fmt.Sprintf("o%d.%d", size, i%100)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
