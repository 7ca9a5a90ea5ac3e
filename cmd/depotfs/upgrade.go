package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/depotfs/depotfs/store/bolt"
)

func runUpgrade(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("upgrade", `Usage: depotfs upgrade [flags]

Upgrades a database written by an earlier depotfs to the layout this one
writes, offline. The depotfs that wrote it refuses the file after, so the
file as it was is first copied beside it (DB.schemaN) and kept: remove it
once the upgraded depot is trusted. serve upgrades the same way when it
opens an older database; every other command (export, backup, restore's
checks) reads an older database as it is and never changes it.

Examples:
  depotfs export --db /srv/depot/depot.db --to before-upgrade.tar
  depotfs upgrade --db /srv/depot/depot.db

Flags:
`)
	db := fs.String("db", defaultDB(), "bbolt database `file` to upgrade; serve must not be running on it")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	old, err := bolt.Upgrade(*db)
	if err != nil {
		if _, ok := errors.AsType[*bolt.LockedError](err); ok {
			return fmt.Errorf("%w\nserve upgrades the database it opens: nothing to do while it runs", err)
		}
		return fmt.Errorf("upgrade: %w", err)
	}
	if old == "" {
		fmt.Fprintf(stdout, "%s: already in the current layout, unchanged\n", *db)
		return nil
	}
	fmt.Fprintf(stdout, "upgraded %s; the file as it was is kept at %s (remove it once the upgraded depot is trusted)\n", *db, old)
	return nil
}
