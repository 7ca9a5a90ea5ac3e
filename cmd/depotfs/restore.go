package main

import (
	"archive/tar"
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/backup"
	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func runBackupVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("backup verify", `Usage: depotfs backup verify FILE

Checks a backup file without changing anything: the container is complete
(a backup cut off halfway is refused), every member matches its SHA-256, the
database opens, and every file's content matches its SHA-256. It needs free
space in the temporary directory for a copy of the database. The content of a
sealed depot is checked with its key (--key-file or DEPOTFS_KEY); without it
everything else is, and the summary says the content was not read.

Flags:
`)
	var key keyConfig
	key.flags(fs)
	var ids identitiesConfig
	ids.flags(fs)
	pos, err := parseFlagsArgs(fs, args, stderr, 1, "FILE")
	if err != nil {
		return err
	}
	kek, err := key.load()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "depotfs-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	h, files, n, err := unpackBackup(ctx, pos[0], tmp, &ids, kek)
	if errors.Is(err, seal.ErrNoKey) {
		fmt.Fprintf(stdout, "ok: %s: revision %d, sealed content not read (%v), audit log of %d file(s)\n", pos[0], h.Revision, err, files)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ok: %s: revision %d, %d file(s) whose content matches its sha256, audit log of %d file(s)\n", pos[0], h.Revision, n, files)
	return nil
}

func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("restore", `Usage: depotfs restore FILE --db PATH [flags]

Restores a backup written by 'depotfs backup': the database as of the
backup's revision, and its audit log, checkpoint and key. Everything is
checked first, as 'depotfs backup verify' does; a backup that is incomplete
or altered changes nothing. A target that already holds a database or an
audit log is refused unless --force, which replaces them atomically: the old
files are renamed aside, the restored ones renamed in (the database first)
and synced, and only then the old files removed; on any error the old files
are put back.

The restored depot's revisions continue above every revision the lost depot
can have handed out, so a revision an agent still holds (if_revision) never
matches another version: above the revision of the database replaced (when
it is still there and readable), above --min-revision, and above the
backup's revision plus 1,000,000 per second since the backup was taken.
Revisions skip, never repeat.

Examples:
  depotfs restore /backups/depot-2026-11-27.dfsbak --db /srv/depot/depot.db
  depotfs audit verify --db /srv/depot/depot.db

Flags:
`)
	db := fs.String("db", "", "database `file` to restore into (required); serve must not be running on it")
	auditLog := fs.String("audit-log", "", "audit log `file` to restore the backup's log as; default audit.log beside --db, as for serve")
	force := fs.Bool("force", false, "replace an existing database and audit log")
	minRev := fs.Uint64("min-revision", 0, "make the restored depot's revisions continue above this `revision` too (the highest one agents may still hold)")
	var key keyConfig
	key.flags(fs)
	var ids identitiesConfig
	ids.flags(fs)
	pos, err := parseFlagsArgs(fs, args, stderr, 1, "FILE")
	if err != nil {
		return err
	}
	kek, err := key.load()
	if err != nil {
		return err
	}
	if *db == "" {
		return usageError{errors.New("--db PATH is required")}
	}
	log := cmp.Or(*auditLog, defaultAuditLog(*db))
	existing, err := targetFiles(*db, log)
	if err != nil {
		return err
	}
	if len(existing) > 0 && !*force {
		return fmt.Errorf("restore: the target is not empty (%s): restore into a new --db, or pass --force to replace it", strings.Join(existing, ", "))
	}
	// The revisions the lost depot handed out: its counter when its
	// database is still here, and at least the margin since the backup.
	var oldRev uint64
	if len(existing) > 0 {
		// Replacing the database of a running server would pull it from
		// under the server: its lock says whether one runs. The file is
		// only read.
		oldRev, err = bolt.FileRevision(*db)
		if _, ok := errors.AsType[*bolt.LockedError](err); ok {
			return fmt.Errorf("restore: %w\nstop the server first (systemctl stop depotfs), then restore", err)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "restore: warning: the revision of the database replaced is unknown (%v): revisions continue above the backup's plus the margin for the time since it\n", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(*db), 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(*db), ".depotfs-restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	h, _, n, err := unpackBackup(ctx, pos[0], tmp, &ids, kek)
	if errors.Is(err, seal.ErrNoKey) {
		// Restored as it is, sealed: serve will need the key.
		fmt.Fprintf(stderr, "restore: the backup's content is sealed and was not read (%v)\n", err)
	} else if err != nil {
		return err
	}
	if h.Store == "nats" {
		return fmt.Errorf("restore: %s is the backup of a NATS depot, the depot's export at revision %d (verified): load it into a depot with import, e.g.\n  tar -xOf %s %s > depot-export.tar\n  depotfs import depot-export.tar --store nats://... --nats-prefix NEW\n(a new prefix: its revisions then continue above the lost depot's) and restore the host's audit log from its %s members with tar if needed",
			pos[0], h.Revision, pos[0], backup.ExportName, backup.AuditDir)
	}
	floor := max(oldRev, *minRev, h.Revision+revisionMargin(h.Created, time.Now()))
	next, err := bolt.RaiseRevision(filepath.Join(tmp, backup.DBName), floor)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(log), 0o700); err != nil {
		return err
	}
	var incoming []rename
	if h.Audit != "" {
		entries, err := os.ReadDir(filepath.Join(tmp, "audit"))
		if err != nil {
			return err
		}
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), h.Audit)
			if !ok {
				return fmt.Errorf("%s: %w: audit member %q is not a file of %s", pos[0], backup.ErrCorrupt, e.Name(), h.Audit)
			}
			incoming = append(incoming, rename{filepath.Join(tmp, "audit", e.Name()), log + rest})
		}
	}
	// The database first: a restore stopped after it leaves the restored
	// depot with some of its audit files, which audit verify reports,
	// never an audit log beside no database.
	incoming = append([]rename{{filepath.Join(tmp, backup.DBName), *db}}, incoming...)
	if err := swapIn(existing, incoming); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	fmt.Fprintf(stdout, "restored revision %d (%d files) into %s, audit log %s; revisions continue above %d\n", h.Revision, n, *db, log, next)
	return nil
}

// targetFiles lists what already exists of a restore's target: the
// database (when not empty) and the audit log's files.
func targetFiles(db, log string) ([]string, error) {
	var out []string
	if fi, err := os.Stat(db); err == nil && fi.Size() > 0 {
		out = append(out, db)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	files, err := audit.BackupFiles(log)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return append(out, files...), nil
}

// unpackBackup reads the backup at file into dir (DBName, and the audit
// log's files under audit/), all or nothing: on an error the caller
// removes dir. Then it checks the content of every file of the database.
// It returns the header and the numbers of audit files and of files.
//
// A backup encrypted to age recipients is decrypted with ids. A sealed
// database's content is read with kek; without it the error
// wraps seal.ErrNoKey, after everything else was checked and unpacked.
func unpackBackup(ctx context.Context, file, dir string, ids *identitiesConfig, kek seal.Wrapper) (h backup.Header, audits, files int, err error) {
	f, err := os.Open(file)
	if err != nil {
		return h, 0, 0, err
	}
	defer f.Close()
	r, err := ids.open(f)
	if err != nil {
		return h, 0, 0, fmt.Errorf("%s: %w", file, err)
	}
	h, err = backup.Read(r, func(h backup.Header, name string, size int64, r io.Reader) error {
		var dst string
		switch {
		case name == backup.DBName || name == backup.ExportName:
			dst = filepath.Join(dir, name)
		case strings.HasPrefix(name, backup.AuditDir) && !strings.Contains(name[len(backup.AuditDir):], "/"):
			audits++
			if err := os.MkdirAll(filepath.Join(dir, "audit"), 0o700); err != nil {
				return err
			}
			dst = filepath.Join(dir, "audit", name[len(backup.AuditDir):])
		default:
			return fmt.Errorf("%s: %w: unknown member %q", file, backup.ErrCorrupt, name)
		}
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, r); err != nil {
			out.Close()
			return fmt.Errorf("%s: %w: %s: %v", file, backup.ErrCorrupt, name, err)
		}
		if err := out.Sync(); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		return h, 0, 0, fmt.Errorf("%s: %w", file, err)
	}
	member, check := backup.DBName, func(ctx context.Context, db string) (int, error) { return checkContents(ctx, db, kek) }
	if h.Store == "nats" {
		member, check = backup.ExportName, checkExport
	}
	if _, err := os.Stat(filepath.Join(dir, member)); err != nil {
		return h, 0, 0, fmt.Errorf("%s: %w: no %s in it", file, backup.ErrCorrupt, member)
	}
	if files, err = check(ctx, filepath.Join(dir, member)); err != nil {
		return h, audits, 0, fmt.Errorf("%s: %w", file, err)
	}
	return h, audits, files, nil
}

// checkExport reads the export at file, the member of a NATS depot's
// backup, comparing every file's bytes with the SHA-256 its manifest
// line gives; it returns how many files it read.
func checkExport(ctx context.Context, file string) (int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	tr := tar.NewReader(bufio.NewReaderSize(f, 1<<20))
	sums := map[string]string{}
	n := 0
	for {
		th, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("%w: %s: %v", backup.ErrCorrupt, backup.ExportName, err)
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		switch {
		case th.Name == exportManifestName:
			dec := json.NewDecoder(tr)
			for dec.More() {
				var e manifestEntry
				if err := dec.Decode(&e); err != nil {
					return n, fmt.Errorf("%w: %s: manifest: %v", backup.ErrCorrupt, backup.ExportName, err)
				}
				sums[e.Path] = e.SHA256
			}
		case strings.HasPrefix(th.Name, exportFilesDir+"/"):
			p := strings.TrimPrefix(th.Name, exportFilesDir)
			h := sha256.New()
			if _, err := io.Copy(h, tr); err != nil {
				return n, fmt.Errorf("%w: %s: %s: %v", backup.ErrCorrupt, backup.ExportName, p, err)
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != sums[p] {
				return n, fmt.Errorf("%w: %s: content hashes to %s, its manifest line says %q", backup.ErrCorrupt, p, got, sums[p])
			}
			n++
		}
	}
	return n, nil
}

// checkContents opens the database at db and reads every present file,
// comparing its content with its SHA-256; it returns how many it read.
func checkContents(ctx context.Context, db string, kek seal.Wrapper) (int, error) {
	st, err := bolt.Open(db, &bolt.Options{ReadOnly: true, Key: kek})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	n := 0
	err = walkTree(ctx, st, "/", func(e store.Entry) error {
		if e.IsDir() || !e.Present {
			return nil
		}
		n++
		return checkContent(ctx, st, e)
	})
	return n, err
}

// checkContent reads the content of e and compares its hash.
func checkContent(ctx context.Context, st store.Store, e store.Entry) error {
	c, err := st.Open(ctx, e.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", e.Path, err)
	}
	defer c.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(c, 0, c.Size())); err != nil {
		return fmt.Errorf("%s: %w", e.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.SHA256 {
		return fmt.Errorf("%w: %s: content hashes to %s, its entry says %s", backup.ErrCorrupt, e.Path, got, e.SHA256)
	}
	return nil
}
