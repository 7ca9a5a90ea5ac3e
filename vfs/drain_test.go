package vfs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs"
)

// TestRefuseOpens: once a shutdown begins, new opens fail with ESHUTDOWN
// while a file already open reads to its end, stat keeps working, and
// WaitClosed waits for that file alone.
func TestRefuseOpens(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	data := pattern(3*chunkSize+5, 9)
	put(t, st, m, store.PutRequest{Path: "/held", Data: data})
	put(t, st, m, store.PutRequest{Path: "/other", Data: []byte("x")})

	f, err := os.Open(m.path("/held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 10)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	if n := m.OpenFiles(); n != 1 {
		t.Fatalf("OpenFiles = %d with one file open; want 1", n)
	}
	m.RefuseOpens()
	for _, p := range []string{"/other", "/held"} {
		if g, err := os.Open(m.path(p)); !errors.Is(err, vfs.ErrnoShuttingDown) {
			if g != nil {
				g.Close()
			}
			t.Errorf("open %s after RefuseOpens: %v; want %v", p, err, syscall.ESHUTDOWN)
		}
	}
	if _, err := os.Stat(m.path("/other")); err != nil {
		t.Errorf("stat after RefuseOpens: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := m.WaitClosed(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitClosed with a file open: %v; want the deadline", err)
	}
	rest, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(append(head, rest...), data) {
		t.Fatalf("reading the held file after RefuseOpens: %v (equal %v)", err, bytes.Equal(append(head, rest...), data))
	}
	f.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := m.WaitClosed(wctx); err != nil {
		t.Fatalf("WaitClosed after the last close: %v", err)
	}
}
