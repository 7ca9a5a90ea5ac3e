package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultMaxSize is the size at which a log file is rotated when
// Options.MaxSize is zero.
const DefaultMaxSize = 64 << 20

// Errors of opening a log.
var (
	// ErrTampered: the end of the log does not agree with itself or with
	// the checkpoint (a record changed or records cut off). depotfs
	// refuses to append to such a log; run Verify for the details.
	ErrTampered = errors.New("audit log tampered")
	// ErrClosed: the Log was closed.
	ErrClosed = errors.New("audit log closed")
)

// Options configure a Log. The zero value works.
type Options struct {
	// MaxSize is the size in bytes beyond which the log file is rotated;
	// zero means DefaultMaxSize, a negative value never rotates.
	MaxSize int64
	// NoSync skips fsync. Only for measuring what fsync costs and for
	// tests: without it an acknowledged call may lose its record in a crash.
	NoSync bool
	// Now is the clock for records without a Time; nil means time.Now.
	Now func() time.Time
	// Logger receives warnings (a torn last line repaired on open); nil
	// means slog.Default().
	Logger *slog.Logger
}

// file is what a Log writes to; *os.File in production.
type file interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
}

// Log appends records to an audit log. See the package documentation for
// the format, the durability and the concurrency guarantees.
type Log struct {
	path string
	opts Options
	log  *slog.Logger
	open func(path string) (file, error) // opens the current file for appending

	// syncMu serializes syncs, checkpoint writes and rotation; it is taken
	// before mu.
	syncMu sync.Mutex
	synced uint64 // seq known durable and checkpointed
	cp     *checkpointFile

	mu     sync.Mutex
	f      file
	size   int64  // bytes of complete records in f
	first  uint64 // seq of the first record in f, 0 while empty
	seq    uint64 // seq of the last record
	head   string // hash of the last record
	err    error  // sticky: set when a write or sync failed
	closed bool
}

// Open opens the audit log at path, creating it, its key and its
// checkpoint if none exist, and checks that its last record is intact and
// not behind the checkpoint (ErrTampered otherwise). A last line left
// incomplete by a crash is cut off with a warning: it was never
// acknowledged.
func Open(path string, opts *Options) (*Log, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	l := &Log{path: path, opts: o, log: o.Logger, open: openAppend}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log directory: %w", err)
	}
	if err := l.load(); err != nil {
		return nil, err
	}
	return l, nil
}

func openAppend(path string) (file, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// load finds the head of the chain, checks it against the checkpoint and
// opens the current file.
func (l *Log) load() error {
	key, err := loadKey(l.path, true)
	if err != nil {
		return err
	}
	fl, err := files(l.path)
	if err != nil {
		return err
	}
	l.head = genesis
	for i := len(fl) - 1; i >= 0; i-- {
		t, err := l.tail(fl[i])
		if err != nil {
			return err
		}
		if fl[i].First == 0 {
			l.size, l.first = t.size, t.first
		}
		if t.last != nil {
			l.seq, l.head = t.last.Seq, t.last.Hash
			break
		}
	}
	cp, slot, ok, err := readCheckpoint(l.path, key)
	if err != nil {
		return err
	}
	switch {
	case !ok && l.seq > 0:
		return fmt.Errorf("%w: %s has records but no checkpoint %s", ErrTampered, l.path, checkpointPath(l.path))
	case ok && cp.Seq > l.seq:
		return fmt.Errorf("%w: %s ends at record %d but the checkpoint records %d: records were cut off", ErrTampered, l.path, l.seq, cp.Seq)
	case ok && cp.Seq == l.seq && cp.Hash != l.head:
		return fmt.Errorf("%w: record %d of %s differs from the checkpoint", ErrTampered, l.seq, l.path)
	}
	if !ok {
		if err := createCheckpoint(l.path, key); err != nil {
			return err
		}
	}
	l.cp, err = openCheckpoint(l.path, key, 1-slot, !l.opts.NoSync)
	if err != nil {
		return err
	}
	l.synced = l.seq
	l.f, err = l.open(l.path)
	if err != nil {
		l.cp.close()
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
}

// createCheckpoint writes the first checkpoint (seq 0) atomically.
func createCheckpoint(path string, key []byte) error {
	tmp := checkpointPath(path) + ".new"
	os.Remove(tmp)
	cp, err := openCheckpointAt(tmp, key)
	if err != nil {
		return err
	}
	err = cp.write(0, genesis)
	if cerr := cp.close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, checkpointPath(path))
	}
	if err != nil {
		return fmt.Errorf("audit checkpoint: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func openCheckpointAt(path string, key []byte) (*checkpointFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &checkpointFile{f: f, key: key, sync: true}, nil
}

// tailInfo describes a file as load needs it.
type tailInfo struct {
	size  int64   // bytes of complete lines
	first uint64  // seq of its first record, 0 if none
	last  *Record // its last record, nil if none
}

// tail reads a log file: its first and last records. In the current file
// an incomplete last line is cut off; in a rotated file (synced whole
// before it was renamed) it is ErrTampered, as is a last record that fails
// its hash.
func (l *Log) tail(lf logFile) (tailInfo, error) {
	var t tailInfo
	f, err := os.Open(lf.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var lastLine []byte
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			t.size += int64(len(line))
			lastLine = line
			if t.first == 0 {
				rec, _, derr := decode(line[:len(line)-1])
				if derr != nil {
					return t, fmt.Errorf("%w: %s line 1: %v", ErrTampered, lf.Path, derr)
				}
				t.first = rec.Seq
			}
		} else if len(line) > 0 {
			if lf.First != 0 {
				return t, fmt.Errorf("%w: %s ends with an incomplete record", ErrTampered, lf.Path)
			}
			l.log.Warn("audit log: cutting off an incomplete last line left by a crash", "file", lf.Path, "bytes", len(line))
			if err := os.Truncate(lf.Path, t.size); err != nil {
				return t, fmt.Errorf("audit log: repair %s: %w", lf.Path, err)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return t, fmt.Errorf("audit log: read %s: %w", lf.Path, err)
		}
	}
	if lastLine == nil {
		return t, nil
	}
	rec, intact, err := decode(bytes.TrimSuffix(lastLine, []byte("\n")))
	if err != nil || !intact {
		return t, fmt.Errorf("%w: the last record of %s does not match its hash", ErrTampered, lf.Path)
	}
	t.last = &rec
	return t, nil
}

// Append writes r as the next record: it sets r.Seq, r.Prev and r.Hash
// (and r.Time, in UTC, if zero) and returns once the record and the
// checkpoint are durable. On error the record may or may not be in the
// log, but the call it describes must be refused; Err reports the failure
// until an Append succeeds again.
func (l *Log) Append(r *Record) error {
	if r.Time.IsZero() {
		r.Time = l.opts.Now()
	}
	r.Time = r.Time.UTC()
	l.mu.Lock()
	for {
		if l.closed {
			l.mu.Unlock()
			return ErrClosed
		}
		r.Seq, r.Prev = l.seq+1, l.head
		line, hash, err := encode(r)
		if err != nil {
			l.mu.Unlock()
			return err
		}
		if l.opts.MaxSize > 0 && l.size > 0 && l.size+int64(len(line)) > l.opts.MaxSize {
			// Rotation takes syncMu, which is taken before mu.
			l.mu.Unlock()
			l.syncMu.Lock()
			l.mu.Lock()
			err := l.rotate(int64(len(line)))
			l.syncMu.Unlock()
			if err != nil {
				l.mu.Unlock()
				return err
			}
			continue // re-encode: another Append may have run meanwhile
		}
		if err := l.write(line); err != nil {
			l.mu.Unlock()
			return err
		}
		if l.first == 0 {
			l.first = r.Seq
		}
		l.seq, l.head, r.Hash = r.Seq, hash, hash
		break
	}
	seq := l.seq
	l.mu.Unlock()
	return l.sync(seq)
}

// write appends one line to the current file, first repairing a failed
// earlier write. mu is held.
func (l *Log) write(line []byte) error {
	if l.err != nil {
		// A failed write may have left part of a line: cut back to the last
		// complete record before writing again.
		if err := l.f.Truncate(l.size); err != nil {
			return l.fail(fmt.Errorf("audit log: repair after failed write: %w", err))
		}
	}
	n, err := l.f.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return l.fail(fmt.Errorf("audit log: write record %d: %w", l.seq+1, err))
	}
	l.size += int64(n)
	l.err = nil
	return nil
}

// fail records err as the sticky error and returns it. mu is held.
func (l *Log) fail(err error) error {
	l.err = err
	return err
}

// rotate renames a current file that cannot take another n bytes and
// starts a new one. syncMu and mu are held.
func (l *Log) rotate(n int64) error {
	if l.size == 0 || l.size+n <= l.opts.MaxSize {
		return nil // another Append rotated already
	}
	if err := l.syncFile(); err != nil {
		return l.fail(err)
	}
	if err := l.f.Close(); err != nil {
		return l.fail(fmt.Errorf("audit log: close for rotation: %w", err))
	}
	if err := os.Rename(l.path, rotatedName(l.path, l.first)); err != nil {
		l.f = brokenFile{err}
		return l.fail(fmt.Errorf("audit log: rotate: %w", err))
	}
	f, err := l.open(l.path)
	if err != nil {
		l.f = brokenFile{err}
		return l.fail(fmt.Errorf("audit log: rotate: %w", err))
	}
	l.f, l.size, l.first = f, 0, 0
	if !l.opts.NoSync {
		if err := syncDir(filepath.Dir(l.path)); err != nil {
			return l.fail(err)
		}
	}
	return nil
}

// syncFile makes the current file durable. mu or syncMu is held.
func (l *Log) syncFile() error {
	if l.opts.NoSync {
		return nil
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("audit log: sync: %w", err)
	}
	return nil
}

// sync returns once record seq is durable and checkpointed. Appends that
// arrive while a sync runs wait and are covered by the next one, so
// concurrent appends share fsyncs.
func (l *Log) sync(seq uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.synced >= seq {
		return nil
	}
	// Rotation needs syncMu, so the current file stays the same while it
	// is synced; records already rotated away were synced by rotate.
	l.mu.Lock()
	f, target, head := l.f, l.seq, l.head
	l.mu.Unlock()
	if !l.opts.NoSync {
		if err := f.Sync(); err != nil {
			return l.failLocked(fmt.Errorf("audit log: sync: %w", err))
		}
	}
	if err := l.cp.write(target, head); err != nil {
		return l.failLocked(err)
	}
	l.synced = target
	return nil
}

// failLocked records err as the sticky error, taking mu.
func (l *Log) failLocked(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fail(err)
}

// Err returns the error of the last failed write or sync, or nil once an
// Append has succeeded since. A server refuses calls while it is set.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.err
}

// Head returns the seq and hash of the last record appended.
func (l *Log) Head() (uint64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.head
}

// Path returns the log's current file.
func (l *Log) Path() string { return l.path }

// Close syncs and closes the log. Appends after Close fail with ErrClosed.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.syncFile()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if cerr := l.cp.close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a rename or creation in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("audit log: sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("audit log: sync directory: %w", err)
	}
	return nil
}

// brokenFile stands in for a current file that could not be reopened after
// a failed rotation: every operation fails with the reason.
type brokenFile struct{ err error }

func (b brokenFile) Write([]byte) (int, error) { return 0, b.err }
func (b brokenFile) Sync() error               { return b.err }
func (b brokenFile) Truncate(int64) error      { return b.err }
func (b brokenFile) Close() error              { return nil }
