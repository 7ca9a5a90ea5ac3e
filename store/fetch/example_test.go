package fetch_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/fetch"
)

// A reader asks for a file that was only listed; an agent sees the request
// and answers it by storing the content.
func Example() {
	dir, err := os.MkdirTemp("", "fetch-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := bolt.Open(filepath.Join(dir, "depot.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	b := fetch.New(st, &fetch.Options{Timeout: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()

	ctx := context.Background()
	if _, err := st.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{
		{Path: "/report.txt", Kind: store.KindFile, Size: 6},
	}}); err != nil {
		log.Fatal(err)
	}

	// The agent: wait for a request, answer it.
	go func() {
		for {
			snap := b.Pending()
			for _, r := range snap.Requests {
				if _, err := st.Put(ctx, store.PutRequest{Path: r.Path, Data: []byte("hello\n")}); err != nil {
					log.Print(err)
				}
				return
			}
			<-snap.Changed
		}
	}()

	// The reader blocks until the content arrives.
	c, err := b.Fetch(ctx, "/report.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, c.Size())
	if _, err := c.ReadAt(buf, 0); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s", buf)
	fmt.Println(b.Stats().Fetched, "fetched")
	// Output:
	// hello
	// 1 fetched
}
