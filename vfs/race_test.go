package vfs_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs"
)

// TestOpenRacingUpdates opens a file over and over, half the time as unzip
// does (stat the path, open it, trust that size), while four writers
// replace it as fast as the store takes it. Every open must succeed, read
// one whole version and what fstat says; and an open that reached the
// inode the stat showed must read the version the stat showed, as on a
// local filesystem, where a rename-replace never changes an inode.
func TestOpenRacingUpdates(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
	}{
		{"page cache", 10 << 10},
		{"passthrough", vfs.PassthroughMinSize + 10<<10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := newStore(t, nil)
			m := mount(t, st, nil)
			const p = "/race/f"
			// Three contents of three sizes in turn: the store drops a
			// content no version has and takes it again later.
			var versions [3][]byte
			sums := map[[sha256.Size]byte]bool{}
			for i := range versions {
				versions[i] = pattern(tc.size+i*1031, byte(i))
				sums[sha256.Sum256(versions[i])] = true
			}
			put(t, st, m, store.PutRequest{Path: p, Data: versions[0]})

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var opens, failed, updates atomic.Int64
			errs := make(chan error, 5) // the first few, for the report
			var readers sync.WaitGroup
			for r := range 4 {
				readers.Add(1)
				go func() {
					defer readers.Done()
					for ctx.Err() == nil {
						opens.Add(1)
						if err := openChecked(m.path(p), sums, r%2 == 0); err != nil {
							failed.Add(1)
							select {
							case errs <- err:
							default:
							}
						}
					}
				}()
			}
			var writers sync.WaitGroup
			start := time.Now()
			for w := range 4 {
				writers.Add(1)
				go func() {
					defer writers.Done()
					for i := w; time.Since(start) < 2*time.Second; i++ {
						res, err := st.Put(ctx, store.PutRequest{Path: p, Data: versions[i%len(versions)]})
						if err == nil {
							err = m.WaitApplied(ctx, res.Entry.Revision)
						}
						if err != nil {
							t.Error(err)
							return
						}
						updates.Add(1)
					}
				}()
			}
			writers.Wait()
			cancel()
			readers.Wait()
			close(errs)
			t.Logf("%d opens during %d updates, %d failed", opens.Load(), updates.Load(), failed.Load())
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// openChecked opens p (after a stat of it when statFirst is set) and reads
// it whole. It fails unless the read holds one of sums and as many bytes
// as fstat says, and, when the open reached the inode the stat showed, as
// many as the stat said.
func openChecked(p string, sums map[[sha256.Size]byte]bool, statFirst bool) error {
	var before syscall.Stat_t
	if statFirst {
		if err := syscall.Stat(p, &before); err != nil {
			return fmt.Errorf("stat: %w", err)
		}
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	var after syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &after); err != nil {
		return fmt.Errorf("fstat: %w", err)
	}
	b, err := io.ReadAll(f)
	switch {
	case err != nil:
		return fmt.Errorf("read: %w", err)
	case int64(len(b)) != after.Size:
		return fmt.Errorf("fstat says %d bytes, read returned %d", after.Size, len(b))
	case statFirst && before.Ino == after.Ino && before.Size != after.Size:
		return fmt.Errorf("stat says %d bytes, fstat of the same inode %d", before.Size, after.Size)
	case !sums[sha256.Sum256(b)]:
		return errors.New("read bytes that are no version of the file")
	}
	return nil
}
