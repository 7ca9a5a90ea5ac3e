package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/backup"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	subs := []command{
		{"create", "write a backup of the depot to a file: online from a running server (--url), or offline (--db); the default command", runBackupCreate},
		{"verify", "check a backup file: the container, every member's hash and every file's content hash", runBackupVerify},
	}
	if _, rec := stderr.(*flagRecorder); !rec && (len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help") {
		return runBackupCreate(ctx, args, stdout, stderr)
	}
	return group("backup", "Backups of a depot: the database as of one revision, with the audit log, its checkpoint and its key, in one file.", subs)(ctx, args, stdout, stderr)
}

// backupResult is the summary a backup prints (--json: as one object).
type backupResult struct {
	File     string  `json:"file"`
	Revision uint64  `json:"revision"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	Online   bool    `json:"online"`
}

func runBackupCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var creds clientCreds
	fs := newFlagSet("backup", `Usage: depotfs backup [create] --to FILE [flags]

Writes a backup of the depot to FILE: the database as of one revision, taken
while agents keep writing (a bbolt read transaction), with the audit log, its
checkpoint and its key. The file holds that key, a secret: it is created with
mode 0600; keep it where the database is kept. 'depotfs backup verify FILE'
checks it; 'depotfs restore FILE --db PATH' puts it back.

Online (default), it asks the running server at --url, with the credentials of
'depotfs status' (DEPOTFS_TOKEN or --token-file, --cert/--key, --ca); the
caller needs the backup right, a grant naming it: backup:/:r (full grants
also do). With --db it copies a stopped server's database instead.

On a terminal it shows a progress bar; otherwise, or with --json, it prints
one line (one JSON object) when done. A backup cut off halfway is removed;
any partial file is refused by verify and restore.

Examples:
  depotfs backup --to /backups/depot-nightly.dfsbak
  DEPOTFS_TOKEN=dfs1_... depotfs backup --url https://depot:7411/mcp --ca ca.crt --to b.dfsbak
  depotfs backup --db /srv/depot/depot.db --to b.dfsbak

Flags:
`)
	to := fs.String("to", "", "backup `file` to write (mode 0600; it must not exist)")
	db := fs.String("db", "", "offline: the database `file` of a stopped server to back up, instead of asking a running one")
	auditLog := fs.String("audit-log", "", "offline: the audit log `file`; default audit.log beside --db, as for serve")
	mcpURL := fs.String("url", "http://127.0.0.1:7411/mcp", "MCP `endpoint` of the running depotfs serve (the backup is fetched from /backup beside it)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object instead of a summary line, and draw no progress bar")
	timeout := fs.Duration("timeout", 0, "give up after this long; 0: no limit")
	creds.flags(fs)
	var rcpt recipientsConfig
	rcpt.flags(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *to == "" {
		return usageError{errors.New("--to FILE is required")}
	}
	recipients, err := rcpt.load()
	if err != nil {
		return err
	}
	if *timeout < 0 {
		return usageError{fmt.Errorf("--timeout %v: want a positive duration, or 0", *timeout)}
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	f, err := os.OpenFile(*to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	start := time.Now()
	res := backupResult{File: *to, Online: *db == ""}
	bar := !*asJSON && isTerminal(stderr)
	var prog *progress
	count := &writeBehind{f: f, add: func(n int64) {
		if prog != nil {
			prog.bytes.Add(n)
		}
	}}
	// Encrypted here, in the client: the server never learns the
	// recipients, and the file never holds the container in the clear.
	out, err := encrypt(count, recipients)
	if err == nil && *db != "" {
		log := cmp.Or(*auditLog, defaultAuditLog(*db))
		err = bolt.BackupFile(*db, func(c bolt.Copy) error {
			prog = newProgress(stderr, 1, c.Size, bar)
			res.Revision = c.Revision
			return writeBackup(out, copyOf(c), log)
		})
	} else if err == nil {
		res.Revision, err = fetchBackup(ctx, &creds, *mcpURL, out, func(size int64) { prog = newProgress(stderr, 1, size, bar) })
	}
	if err == nil {
		err = out.Close()
	}
	if prog != nil {
		prog.stop()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(*to) // a backup cut off halfway is no backup
		if _, ok := errors.AsType[*bolt.LockedError](err); ok {
			return fmt.Errorf("%w\na server is running on it: back it up online (without --db), or stop it first", err)
		}
		return fmt.Errorf("backup: %w", err)
	}
	res.Bytes, res.Seconds = count.off, time.Since(start).Seconds()
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "backed up revision %d to %s: %s in %v (%s/s)\n", res.Revision, res.File, humanSize(res.Bytes),
		time.Since(start).Round(time.Millisecond), humanSize(int64(float64(res.Bytes)/max(res.Seconds, 1e-3))))
	return nil
}

// dbCopy is the depot member of a backup (the database, or the export of
// a NATS depot): its revision and size, and how to write its bytes.
type dbCopy struct {
	Revision uint64
	Size     int64
	WriteTo  func(io.Writer) error
}

// copyOf is the dbCopy of a bolt copy, valid while the copy is.
func copyOf(c bolt.Copy) dbCopy {
	return dbCopy{c.Revision, c.Size, func(w io.Writer) error { _, err := c.WriteTo(w); return err }}
}

// writeBackup writes the backup container of the database copy c and of
// the audit log at auditLog (left out when it does not exist) to w.
func writeBackup(w io.Writer, c dbCopy, auditLog string) error {
	return writeContainer(w, "bolt", backup.DBName, c, auditLog)
}

// writeContainer writes a backup container of a depot on store whose
// member, name, is c, with the audit log at auditLog, to w.
func writeContainer(w io.Writer, store, name string, c dbCopy, auditLog string) error {
	files, err := audit.BackupFiles(auditLog)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	h := backup.Header{Store: store, Revision: c.Revision}
	if len(files) > 0 {
		h.Audit = filepath.Base(auditLog)
	}
	bw, err := backup.NewWriter(w, h)
	if err != nil {
		return err
	}
	if err := bw.Add(name, c.Size, c.WriteTo); err != nil {
		return err
	}
	for _, p := range files {
		if err := addFile(bw, backup.AuditDir+filepath.Base(p), p); err != nil {
			return err
		}
	}
	return bw.Close()
}

// addFile adds the file at p as it is when opened: a log that grows
// meanwhile is copied up to its size at that moment. A file removed
// before it is opened (retention) is left out.
func addFile(bw *backup.Writer, name, p string) error {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return bw.Add(name, fi.Size(), func(w io.Writer) error { _, err := io.CopyN(w, f, fi.Size()); return err })
}

// fetchBackup streams a backup from the running server into w and
// returns its revision; begin is called with the size of its database
// (most of it; 0 when not announced) before the body is read.
func fetchBackup(ctx context.Context, creds *clientCreds, mcpURL string, w io.Writer, begin func(size int64)) (uint64, error) {
	resp, u, err := creds.request(ctx, http.MethodGet, mcpURL, mcpserver.BackupPath, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	rev, err := strconv.ParseUint(resp.Header.Get(mcpserver.BackupRevisionHeader), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: no %s header: not a depotfs backup endpoint", u, mcpserver.BackupRevisionHeader)
	}
	size, _ := strconv.ParseInt(resp.Header.Get(mcpserver.BackupSizeHeader), 10, 64)
	begin(size)
	if _, err := io.Copy(w, resp.Body); err != nil {
		return 0, fmt.Errorf("%s: the backup was cut off: %w", u, err)
	}
	return rev, nil
}

// onlineBackup is the Backup of mcpserver.Options for a bolt store whose
// audit log is auditLog: one read transaction copies the database into a
// spool file in spool (at the disk's pace, not the client's), then the
// spool file and the audit log's files as they are at that moment are
// streamed. A read transaction held for as long as a client takes to read
// would pin every page the writers free meanwhile: the file grew from 35
// to 774 MiB during 120 overwrites of one 1 MiB file behind a client that
// stopped reading.
func onlineBackup(st *bolt.Store, spool, auditLog string) func(context.Context, io.Writer, func(uint64, int64)) error {
	return func(ctx context.Context, w io.Writer, started func(rev uint64, dbSize int64)) error {
		f, err := os.CreateTemp(spool, "backup-*")
		if err != nil {
			return fmt.Errorf("backup spool: %w", err)
		}
		// Unlinked at once: the space is the server's only while the
		// file is open, and a crash leaves nothing behind.
		os.Remove(f.Name())
		defer f.Close()
		var c dbCopy
		err = st.Backup(ctx, func(bc bolt.Copy) error {
			c = dbCopy{Revision: bc.Revision, Size: bc.Size}
			_, err := bc.WriteTo(f)
			return err
		})
		if err != nil {
			return fmt.Errorf("backup spool: %w", err)
		}
		c.WriteTo = func(w io.Writer) error {
			_, err := io.Copy(w, io.NewSectionReader(f, 0, c.Size))
			return err
		}
		started(c.Revision, c.Size)
		return writeBackup(w, c, auditLog)
	}
}

// exportBackup is the Backup of mcpserver.Options for a store that is not
// bolt (NATS): the depot's export at the revision of a temporary snapshot,
// spooled into a file in spool at the disk's pace (the snapshot is held
// only that long, and the container needs the member's size first), then
// streamed with the audit log's files as they are at that moment.
func exportBackup(st store.Store, spool, auditLog string) func(context.Context, io.Writer, func(uint64, int64)) error {
	return func(ctx context.Context, w io.Writer, started func(rev uint64, size int64)) error {
		f, err := os.CreateTemp(spool, "backup-*")
		if err != nil {
			return fmt.Errorf("backup spool: %w", err)
		}
		os.Remove(f.Name())
		defer f.Close()
		res, err := exportStore(ctx, st, false, f, func(uint64) {})
		if err != nil {
			return fmt.Errorf("backup spool: %w", err)
		}
		size, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return err
		}
		c := dbCopy{Revision: res.Revision, Size: size, WriteTo: func(w io.Writer) error {
			_, err := io.Copy(w, io.NewSectionReader(f, 0, size))
			return err
		}}
		started(c.Revision, c.Size)
		return writeContainer(w, "nats", backup.ExportName, c, auditLog)
	}
}

// writeBehind writes to f and starts the disk writing each 16 MiB as soon
// as it is written (sync_file_range, as PostgreSQL's checkpoints do),
// instead of leaving a whole backup's dirty pages to the final fsync: a
// burst of a gigabyte stalls every other fsync on the disk, the depot's
// writers' included, for most of a second.
const writeBehindStep = 16 << 20

type writeBehind struct {
	f         *os.File
	off, done int64       // bytes written; bytes whose writing was started
	add       func(int64) // told the bytes of each write
}

func (w *writeBehind) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.off += int64(n)
	w.add(int64(n))
	if w.off-w.done >= writeBehindStep {
		// Advice only: where the file system cannot, the final fsync
		// writes everything as before.
		_ = unix.SyncFileRange(int(w.f.Fd()), w.done, w.off-w.done, unix.SYNC_FILE_RANGE_WRITE)
		w.done = w.off
	}
	return n, err
}
