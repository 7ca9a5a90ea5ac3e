package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/depotfs/depotfs/store/bolt"
)

func runCompact(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compact", `Usage: depotfs compact [flags]

Rewrites the database offline into a new file holding only live pages, then
replaces the old file, and prints the size before and after. bbolt never
returns freed pages to the filesystem: after deletions, evictions or large
uploads the file stays at its high-water mark until compacted. depotfs serve
must be stopped first (the database allows one process at a time); the
compaction needs free disk space for a second copy of the live data.

Examples:
  systemctl stop depotfs && depotfs compact && systemctl start depotfs
  depotfs compact --db /srv/depot/depot.db

Flags:
`)
	db := fs.String("db", defaultDB(), "bbolt database `file` to compact")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	start := time.Now()
	res, err := bolt.Compact(*db)
	if err != nil {
		if locked, ok := errors.AsType[*bolt.LockedError](err); ok {
			who := "another process"
			if locked.PID != 0 {
				who = fmt.Sprintf("pid %d", locked.PID)
			}
			return fmt.Errorf("%w\ncompact works offline: stop %s first (for the service: systemctl stop depotfs), then run it again", err, who)
		}
		return err
	}
	fmt.Fprintf(stdout, "compacted %s in %v\n  before  %s\t(%d bytes)\n  after   %s\t(%d bytes)\n  freed   %s\n", *db,
		time.Since(start).Round(time.Millisecond), humanSize(res.Before), res.Before, humanSize(res.After), res.After,
		humanSize(res.Before-res.After))
	return nil
}
