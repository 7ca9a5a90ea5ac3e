package main

import (
	"fmt"
	"os"
)

// spoolDir is the directory of the temporary files of archive uploads for
// the database db: beside it, so on the disk the disk reserve watches,
// and one per database.
func spoolDir(db string) string { return db + ".spool" }

// prepareSpool empties (or creates) the spool directory dir: whatever is
// in it was left by a server that died during an upload, since only one
// server uses a database at a time.
func prepareSpool(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("sweeping the upload spool %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("upload spool: %w", err)
	}
	return nil
}
