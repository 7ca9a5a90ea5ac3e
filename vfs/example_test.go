package vfs_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/vfs"
)

// Mount a store, write through the store, and read the change back through
// the mount once WaitApplied says the kernel has forgotten the old bytes.
func ExampleMount() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "depotfs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	st, err := bolt.Open(filepath.Join(tmp, "depot.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	m, err := vfs.Mount(ctx, filepath.Join(tmp, "mnt"), st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Unmount()

	for _, text := range []string{"first", "second"} {
		res, err := st.Put(ctx, store.PutRequest{Path: "/notes/today.txt", Data: []byte(text)})
		if err != nil {
			log.Fatal(err)
		}
		if err := m.WaitApplied(ctx, res.Entry.Revision); err != nil {
			log.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(m.Dir(), "notes", "today.txt"))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(b))
	}
	// Output:
	// first
	// second
}
