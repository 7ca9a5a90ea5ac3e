package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store/bolt"
)

var runKey = group("key", "Keys of a depot sealed at rest (docs/security.md, \"Encryption at rest\").", []command{
	{"new", "write a new random key-encryption key to a file (mode 0600)", runKeyNew},
	{"rotate", "rewrap a sealed depot's data key under a new key-encryption key, offline; --reencrypt: also a new data key, the content resealed by serve in the background", runKeyRotate},
})

func runKeyNew(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("key new", `Usage: depotfs key new --out FILE

Writes a new random key-encryption key (64 hex digits) to FILE, created
with mode 0600; an existing FILE is never overwritten. Start depotfs serve
on a new depot with --key-file FILE and its content is sealed. Keep a copy
of the key away from the depot and its backups: without it the content
cannot be read.

Examples:
  depotfs key new --out /etc/depotfs/depot.key

Flags:
`)
	out := fs.String("out", "", "`file` to create (required)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *out == "" {
		return usageError{errors.New("--out is required")}
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	text := seal.NewKeyText()
	if _, err := f.Write(text); err != nil {
		f.Close()
		return fmt.Errorf("key file: %w", err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	k, err := seal.ParseKey(text)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote key %s to %s\n", k.KeyID(), *out)
	return nil
}

func runKeyRotate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("key rotate", `Usage: depotfs key rotate --key-file CURRENT --new-key-file NEW [--reencrypt] [--db FILE]

Rewraps the data key of a sealed depot under the key-encryption key in NEW:
one small record is rewritten, whatever the depot holds, and the content
stays sealed under the same data key. From then on serve needs NEW; CURRENT
opens nothing the depot holds (backups taken before still need CURRENT).
depotfs serve must be stopped first.

With --reencrypt, also for a data key that may have leaked, the depot gets
a new data key wrapped by NEW (which may be the same file as CURRENT), and
the next depotfs serve with NEW reseals every chunk under it in the
background, at --reseal-rate, while it serves as usual: content not yet
resealed is read with the previous data key, which serve keeps (wrapped by
NEW) until the last chunk is done, across restarts. It logs
"reencryption finished"; then run 'depotfs compact' offline to drop the
old sealed pages from the file. Bolt depots only.

Examples:
  depotfs key new --out new.key
  systemctl stop depotfs
  depotfs key rotate --key-file depot.key --new-key-file new.key
  mv new.key depot.key && systemctl start depotfs
  depotfs key rotate --key-file depot.key --new-key-file depot.key --reencrypt

Flags:
`)
	db := fs.String("db", defaultDB(), "bbolt database `file` of the depot")
	var cur keyConfig
	cur.flags(fs)
	next := fs.String("new-key-file", "", "`file` of the new key-encryption key (required; 'depotfs key new')")
	reencrypt := fs.Bool("reencrypt", false, "also make a new data key, under which the next serve reseals the content in the background")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *next == "" {
		return usageError{errors.New("--new-key-file is required")}
	}
	curKey, err := cur.load()
	if err != nil {
		return err
	}
	if curKey == nil {
		return usageError{errors.New("--key-file (or DEPOTFS_KEY) is required: the key the depot is sealed with now")}
	}
	nextKey, err := seal.LoadKeyFile(*next)
	if err != nil {
		return err
	}
	rotate := bolt.Rekey
	if *reencrypt {
		rotate = bolt.Reencrypt
	}
	r, err := rotate(ctx, *db, curKey, nextKey)
	if err != nil {
		if locked, ok := errors.AsType[*bolt.LockedError](err); ok {
			return lockedAdvice(locked, err)
		}
		return err
	}
	if *reencrypt {
		fmt.Fprintf(stdout, "new data key %s of %s wrapped by key %s; start serve with that key to reseal the content under it\n", r.ID, *db, r.KEKID)
		return nil
	}
	fmt.Fprintf(stdout, "data key %s of %s is now wrapped by key %s (was %s)\n", r.ID, *db, r.KEKID, curKey.KeyID())
	return nil
}

func runSeal(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("seal", `Usage: depotfs seal --key-file FILE [--db FILE]

Seals the content of an existing depot written without a key, offline:
every chunk of stored content and of uploads in progress is rewritten
sealed under a new data key wrapped by the key in --key-file (or
DEPOTFS_KEY), in transactions of about 32 MiB, then the file is compacted
so that no clear copy stays in its free pages. Stopped or killed, it goes
on where it stopped when run again with the same key; until it finishes,
serve refuses the depot. depotfs serve must be stopped first, and the
compaction needs free disk space for a second copy of the live data.

Backups, exports and upgrade copies made before still hold the content in
the clear: delete them, or keep them as securely as before.

Examples:
  depotfs key new --out /etc/depotfs/depot.key
  systemctl stop depotfs
  depotfs seal --db /var/lib/depotfs/depot.db --key-file /etc/depotfs/depot.key
  # then start serve with --key-file /etc/depotfs/depot.key

Flags:
`)
	db := fs.String("db", defaultDB(), "bbolt database `file` of the depot")
	var key keyConfig
	key.flags(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	kek, err := key.load()
	if err != nil {
		return err
	}
	if kek == nil {
		return usageError{errors.New("--key-file (or DEPOTFS_KEY) is required")}
	}
	start := time.Now()
	last := time.Time{}
	err = bolt.SealFile(ctx, *db, kek, func(p bolt.SealProgress) {
		if time.Since(last) >= time.Second || p.Done == p.Total {
			last = time.Now()
			fmt.Fprintf(stderr, "sealed %d of %d chunks\n", p.Done, p.Total)
		}
	})
	switch {
	case errors.Is(err, bolt.ErrAlreadySealed):
		// Compacted all the same: a run killed after sealing and before
		// its compaction left clear bytes in the free pages.
		fmt.Fprintf(stderr, "%s: the content is sealed already; compacting\n", *db)
	case err != nil:
		if locked, ok := errors.AsType[*bolt.LockedError](err); ok {
			return lockedAdvice(locked, err)
		}
		return err
	}
	res, err := bolt.Compact(*db)
	if err != nil {
		return fmt.Errorf("sealed, but compacting failed (the clear bytes stay in the file's free pages until 'depotfs compact' succeeds): %w", err)
	}
	fmt.Fprintf(stdout, "sealed %s under key %s in %v; compacted to %s\n", *db, kek.KeyID(), time.Since(start).Round(time.Millisecond), humanSize(res.After))
	return nil
}
