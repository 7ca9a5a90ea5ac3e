package nfsserver_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/depotfs/depotfs/nfsserver"
	"github.com/depotfs/depotfs/store"
)

// BenchmarkReadDirPlus lists a directory of 200 files with READDIRPLUS
// through go-nfs-client, as a walk does for each directory (bench/nfs.sh
// walks 100 of them): the server's cost a directory, for profiling.
func BenchmarkReadDirPlus(b *testing.B) {
	st, dir := newStore(b)
	var reqs []store.PutRequest
	for i := range 200 {
		reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/d/f%06d.txt", i), Data: []byte("some content\n")})
	}
	if _, err := st.PutBatch(context.Background(), reqs); err != nil {
		b.Fatal(err)
	}
	c := dial(b, serve(b, st, dir, nfsserver.Options{}), "/")
	b.ResetTimer()
	for range b.N {
		es, err := c.ReadDirPlus("/d")
		if err != nil || len(es) != 200 {
			b.Fatalf("readdirplus: %d entries, %v", len(es), err)
		}
	}
}
