package bolt_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func Example() {
	dir, err := os.MkdirTemp("", "depot")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := bolt.Open(filepath.Join(dir, "depot.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	events, err := s.Watch(ctx, "/workspace", 0)
	if err != nil {
		log.Fatal(err)
	}
	res, err := s.Put(ctx, store.PutRequest{Path: "/workspace/app/main.go", Data: []byte("package main\n"), Writer: "agent-1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Entry.Size, res.Entry.SHA256[:12])

	c, err := s.Open(ctx, "/workspace/app/main.go")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", b)

	for range 3 {
		ev := <-events
		fmt.Println(ev.Revision, ev.Kind, ev.Path)
	}
	// Output:
	// created 13 df1d036cbbf3
	// "package main\n"
	// 1 created /workspace
	// 2 created /workspace/app
	// 3 created /workspace/app/main.go
}
