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
	natsstore "github.com/depotfs/depotfs/store/nats"
	"github.com/nats-io/nats.go"
)

var runKey = group("key", "Keys of a depot sealed at rest (docs/security.md, \"Encryption at rest\").", []command{
	{"new", "write a new random key-encryption key to a file (mode 0600)", runKeyNew},
	{"rotate", "rewrap a sealed depot's data key under a new key-encryption key (bolt: offline; NATS: while hosts serve it); --reencrypt: also a new data key, the content resealed by serve in the background (bolt)", runKeyRotate},
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
	fs := newFlagSet("key rotate", `Usage: depotfs key rotate --key-file CURRENT --new-key-file NEW [--reencrypt] [--db FILE | --store nats://... [--nats-prefix P]]

Rewraps the data key of a sealed depot under the key-encryption key in NEW:
one small record is rewritten, whatever the depot holds, and the content
stays sealed under the same data key. From then on serve needs NEW; CURRENT
opens nothing the depot holds (backups taken before still need CURRENT).
For a bolt depot, depotfs serve must be stopped first.

For a NATS depot (--store nats://..., with --nats-prefix and the NATS
credentials flags as serve takes them), the rotation runs while hosts
serve it: the record is replaced only if no other rotation changed it
meanwhile, and only if CURRENT unwraps it. Hosts already running keep
working with the data key they hold; restart each with NEW (a host started
with CURRENT is refused, naming both keys).

With --reencrypt, also for a data key that may have leaked, the depot gets
a new data key wrapped by NEW (which may be the same file as CURRENT), and
the next depotfs serve with NEW reseals every chunk under it in the
background, at --reseal-rate, while it serves as usual: content not yet
resealed is read with the previous data key, which serve keeps (wrapped by
NEW) until the last chunk is done, across restarts. It logs
"reencryption finished"; then run 'depotfs compact' offline to drop the
old sealed pages from the file. Bolt depots only: a NATS depot gets a new
data key by an export and an import into a new prefix.

Examples:
  depotfs key new --out new.key
  systemctl stop depotfs
  depotfs key rotate --key-file depot.key --new-key-file new.key
  mv new.key depot.key && systemctl start depotfs
  depotfs key rotate --key-file depot.key --new-key-file depot.key --reencrypt
  depotfs key rotate --store nats://n1:4222,n2:4222,n3:4222 --key-file depot.key --new-key-file new.key

Flags:
`)
	var dc directConfig
	dc.flags(fs)
	next := fs.String("new-key-file", "", "`file` of the new key-encryption key (required; 'depotfs key new')")
	reencrypt := fs.Bool("reencrypt", false, "also make a new data key, under which the next serve reseals the content in the background (bolt only)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *next == "" {
		return usageError{errors.New("--new-key-file is required")}
	}
	if err := dc.store.validate(); err != nil {
		return usageError{err}
	}
	onNATS := dc.store.url != "bolt"
	if onNATS && *reencrypt {
		return fmt.Errorf("--reencrypt: not available for a NATS depot, whose hosts would all have to switch data keys at the same moment; "+
			"to give it a new data key, export it and import it into a new prefix, then start every host on that prefix with the new key:\n"+
			"  depotfs export --store %[1]s --nats-prefix %[2]s --key-file CURRENT --to depot.tar\n"+
			"  depotfs import depot.tar --store %[1]s --nats-prefix NEW-PREFIX --key-file NEW", dc.store.url, dc.store.prefix)
	}
	curKey, err := dc.key.load()
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
	if onNATS {
		r, err := rotateNATS(ctx, dc.store, curKey, nextKey)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "data key %s of NATS depot %s is now wrapped by key %s (was %s); hosts running keep working: restart each with the new key\n", r.ID, dc.store.prefix, r.KEKID, curKey.KeyID())
		return nil
	}
	rotate := bolt.Rekey
	if *reencrypt {
		rotate = bolt.Reencrypt
	}
	r, err := rotate(ctx, dc.db, curKey, nextKey)
	if err != nil {
		if locked, ok := errors.AsType[*bolt.LockedError](err); ok {
			return lockedAdvice(locked, err)
		}
		return err
	}
	if *reencrypt {
		fmt.Fprintf(stdout, "new data key %s of %s wrapped by key %s; start serve with that key to reseal the content under it\n", r.ID, dc.db, r.KEKID)
		return nil
	}
	fmt.Fprintf(stdout, "data key %s of %s is now wrapped by key %s (was %s)\n", r.ID, dc.db, r.KEKID, curKey.KeyID())
	return nil
}

// rotateNATS rewraps the data key of the NATS depot c names, waiting up to
// --nats-wait (at least natsRekeyWait) for the cluster to answer.
func rotateNATS(ctx context.Context, c storeConfig, cur, next seal.Wrapper) (seal.Record, error) {
	nc, err := c.connect([]nats.Option{nats.Name("depotfs key rotate")})
	if err != nil {
		return seal.Record{}, err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, max(c.wait, natsRekeyWait))
	defer cancel()
	for !nc.IsConnected() {
		select {
		case <-ctx.Done():
			return seal.Record{}, fmt.Errorf("connect to NATS %s: no server answered within --nats-wait %v", c.url, c.wait)
		case <-time.After(100 * time.Millisecond):
		}
	}
	r, err := natsstore.Rekey(ctx, nc, c.prefix, cur, next)
	if errors.Is(err, natsstore.ErrNoDepot) {
		return seal.Record{}, fmt.Errorf("%w\ncheck that --store reaches the depot's servers and --nats-prefix names it", err)
	}
	return r, err
}

// natsRekeyWait is the least time key rotate waits for a NATS cluster,
// even with --nats-wait 0: a rotation is one request, and a cluster in an
// election answers within seconds.
const natsRekeyWait = 10 * time.Second

func runSeal(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("seal", `Usage: depotfs seal --key-file FILE [--db FILE]

Seals the content of an existing depot written without a key, offline
(or moves a depot sealed by a depotfs from before keyed addresses to
them, under the key it has):
every chunk of stored content and of uploads in progress is rewritten
sealed under a new data key wrapped by the key in --key-file (or
DEPOTFS_KEY), and stored under a keyed address instead of its SHA-256,
whose plain form the indexes and records then keep only enciphered, in
transactions of about 32 MiB, then the file is compacted
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
	last, shown := time.Time{}, int64(-1)
	err = bolt.SealFile(ctx, *db, kek, func(p bolt.SealProgress) {
		// After the chunks, the indexes are renamed: "N of N" once.
		if (time.Since(last) >= time.Second && p.Done != shown) || (p.Done == p.Total && shown != p.Total) {
			last, shown = time.Now(), p.Done
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
