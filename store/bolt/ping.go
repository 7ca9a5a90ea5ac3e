package bolt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// Ping commits an empty write transaction, through the same group commit
// and fsync as every write, and returns its error: nil means the store can
// commit now. It is safe for concurrent use. A health check that runs
// often calls Writable instead, which writes nothing.
func (s *Store) Ping(ctx context.Context) error {
	return s.update(ctx, func(*wtx) error { return nil })
}

// Writable reports, without writing anything, whether the store can
// commit: nil when it is open, a read transaction finds its tree, its last
// commit did not fail (a failed commit counts until one succeeds), and the
// filesystem of its file is mounted read-write with room for the file to
// grow by one step. A read-only filesystem is reported as syscall.EROFS, a
// full one as syscall.ENOSPC. depotfs serve's /healthz and systemd
// watchdog call it: a commit per check (Ping) moved the file's mtime and
// cost an fsync every second on an idle server. It is safe for concurrent
// use.
func (s *Store) Writable(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	err := s.db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil || tx.Bucket(bucketTree) == nil {
			return errors.New("the database holds no tree")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bolt: read: %w", dbErr(err))
	}
	if p := s.commitErr.Load(); p != nil {
		return fmt.Errorf("bolt: the last commit failed: %w", *p)
	}
	dir := filepath.Dir(s.db.Path())
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("bolt: statfs %s: %w", dir, err)
	}
	if st.Flags&unix.ST_RDONLY != 0 {
		return fmt.Errorf("bolt: %s is on a read-only filesystem: %w", dir, syscall.EROFS)
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < allocSize {
		return fmt.Errorf("bolt: %d bytes free under %s, less than the %d the file grows by: %w", free, dir, allocSize, syscall.ENOSPC)
	}
	return nil
}
