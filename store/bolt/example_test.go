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

// A snapshot holds the tree as of one revision while writes go on; with
// KeepVersions each file keeps its last overwritten versions, and Copy
// with FromRevision restores one.
func ExampleStore_CreateSnapshot() {
	dir, err := os.MkdirTemp("", "depot")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := bolt.Open(filepath.Join(dir, "depot.db"), &bolt.Options{KeepVersions: store.DefaultKeepVersions})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	read := func(c store.Content, err error) string {
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
		if err != nil {
			log.Fatal(err)
		}
		return string(b)
	}

	first, err := s.Put(ctx, store.PutRequest{Path: "/notes.txt", Data: []byte("v1")})
	if err != nil {
		log.Fatal(err)
	}
	snap, err := s.CreateSnapshot(ctx, store.SnapshotRequest{Name: "before-edit"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.Put(ctx, store.PutRequest{Path: "/notes.txt", Data: []byte("v2")}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(read(s.Open(ctx, "/notes.txt")), read(s.OpenAt(ctx, "/notes.txt", snap.Revision)))

	if _, err := s.Copy(ctx, store.CopyRequest{From: "/notes.txt", FromRevision: first.Entry.Revision, To: "/notes.txt"}); err != nil {
		log.Fatal(err)
	}
	h, err := s.History(ctx, "/notes.txt")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(read(s.Open(ctx, "/notes.txt")), len(h))
	// Output:
	// v2 v1
	// v1 3
}
