package vfs_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// BenchmarkOpenReadClose opens, reads and closes small files through the
// mount with warm caches: the per-file cost a tree walker (grep -r, cat of
// every file) pays on a repeated pass.
func BenchmarkOpenReadClose(b *testing.B) {
	st, _ := newStore(b, nil)
	m := mount(b, st, nil)
	const n = 1000
	reqs := make([]store.PutRequest, n)
	for i := range reqs {
		reqs[i] = store.PutRequest{Path: fmt.Sprintf("/d/f%04d", i), Data: pattern(1000, byte(i))}
	}
	if _, err := st.PutBatch(b.Context(), reqs); err != nil {
		b.Fatal(err)
	}
	waitApplied(b, st, m)
	buf := make([]byte, 4096)
	b.ResetTimer()
	for i := range b.N {
		f, err := os.Open(m.path(reqs[i%n].Path))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Read(buf); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
