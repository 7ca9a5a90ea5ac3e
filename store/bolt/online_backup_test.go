package bolt

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// A write that grows the file must not wait for a backup in progress (one
// long read transaction): the map leaves the file room to grow, so bbolt
// need not remap, which would wait for every reader to end.
func TestWriteDoesNotWaitForBackup(t *testing.T) {
	old := leastMmap
	leastMmap = 1 << 20
	t.Cleanup(func() { leastMmap = old })

	s, err := Open(filepath.Join(t.TempDir(), "depot.db"), &Options{MaxStoreBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()

	inBackup, release := make(chan struct{}), make(chan struct{})
	backupDone := make(chan error, 1)
	go func() {
		backupDone <- s.Backup(ctx, func(Copy) error {
			close(inBackup)
			<-release
			return nil
		})
	}()
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	<-inBackup

	data := bytes.Repeat([]byte("x"), 8<<20) // the file grows well past 1 MiB
	written := make(chan error, 1)
	go func() {
		_, err := s.Put(ctx, store.PutRequest{Path: "/big", Data: data})
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			t.Fatalf("put during a backup: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a put that grows the file waited for the backup's read transaction")
	}
	close(release)
	if err := <-backupDone; err != nil {
		t.Fatalf("backup: %v", err)
	}
}
