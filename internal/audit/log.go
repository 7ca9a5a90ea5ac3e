package audit

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/depotfs/depotfs/internal/atomicfile"
	"github.com/depotfs/depotfs/internal/clip"
)

// DefaultMaxSize is the size at which a log file is rotated when
// Options.MaxSize is zero.
const DefaultMaxSize = 64 << 20

// DefaultDeferredSync bounds how long a record appended with
// Log.AppendDeferred waits for its fsync when Options.DeferredSync is
// zero.
const DefaultDeferredSync = time.Second

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
	// RetainSize bounds the bytes of rotated files kept: when a rotation
	// takes them beyond it, the oldest are deleted (the chain then starts
	// at a signed base, so what is kept still verifies). Zero keeps all.
	RetainSize int64
	// RetainAge deletes rotated files last written longer ago than this,
	// at rotation and at Open. Zero keeps all.
	RetainAge time.Duration
	// NoSync skips fsync. Only for measuring what fsync costs and for
	// tests: without it an acknowledged call may lose its record in a crash.
	NoSync bool
	// DeferredSync bounds how long a record appended with
	// Log.AppendDeferred waits until it is durable; zero means
	// DefaultDeferredSync.
	DeferredSync time.Duration
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
	key  []byte
	lock *os.File // the writer lock, held until Close

	// syncMu serializes the syncs of the current file and rotation; cpMu
	// serializes checkpoint writes. They are two stages, so one group's
	// checkpoint is flushed while the next group's records are: a
	// checkpoint only ever names records already durable, and never an
	// early record not yet settled, nor any record after it (see
	// early.go). Taken in the order syncMu, cpMu, mu.
	syncMu      sync.Mutex
	durable     uint64 // seq known durable, written under syncMu and mu
	durableHead string // hash of record durable
	cpMu        sync.Mutex
	cpSettled   *sync.Cond // on cpMu: an early record was settled
	synced      uint64     // seq known durable and checkpointed, under cpMu
	cp          *checkpointFile

	mu        sync.Mutex
	f         file
	size      int64  // bytes of complete records in f
	first     uint64 // seq of the first record in f, 0 while empty
	firstPrev string // prev of that record
	seq       uint64 // seq of the last record
	head      string // hash of the last record
	err       error  // sticky: set when a write or sync failed
	closed    bool
	// pending holds the early records not settled yet, by seq, with the
	// hash of the record before each: the checkpoint stops there.
	pending map[uint64]string

	// now (one slot) asks the flusher to sync the file at once: an early
	// record was written, and its fsync should run while its change
	// commits.
	now chan struct{}

	// The flusher makes deferred records durable: kick (one slot) wakes
	// it after a deferred append, stop ends it, done closes when it has.
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// Open opens the audit log at path for writing, creating it, its key and
// its checkpoint if none exist. It takes the log's writer lock (ErrLocked
// names the process holding it) and verifies what no earlier Open did:
// rotated files without a valid seal, and the current file, record by
// record, against the key and the checkpoint. A broken chain is a
// *VerifyError (wrapping ErrTampered) naming the record. A last line left
// incomplete by a crash is cut off with a warning; records after the
// checkpoint are kept and reported, in the log and in a recovery record.
func Open(path string, opts *Options) (*Log, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.MaxSize = cmp.Or(o.MaxSize, DefaultMaxSize)
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	o.DeferredSync = cmp.Or(o.DeferredSync, DefaultDeferredSync)
	l := &Log{path: path, opts: o, log: o.Logger, pending: map[uint64]string{},
		kick: make(chan struct{}, 1), now: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	l.cpSettled = sync.NewCond(&l.cpMu)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log directory: %w", err)
	}
	var err error
	if l.lock, err = lock(path); err != nil {
		return nil, err
	}
	tail, err := l.load()
	if err != nil {
		l.lock.Close()
		return nil, err
	}
	go l.flusher()
	if tail.from != 0 {
		what := tail.describe(l.synced)
		l.log.Warn("audit log: "+what, "file", path)
		err = l.Append(&Record{Event: EventRecovery, Reason: what})
	}
	if err == nil {
		err = l.retain() // l is not shared yet: no lock to take
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func openAppend(path string) (file, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// load verifies the log as far as no earlier Open has, seals rotated
// files it verified, checks the end against the checkpoint and opens the
// current file. It returns the records after the checkpoint.
func (l *Log) load() (tailRange, error) {
	key, err := loadKey(l.path, true)
	if err != nil {
		return tailRange{}, err
	}
	l.key = key
	cp, slot, hasCP, err := readCheckpoint(l.path, key)
	if err != nil {
		return tailRange{}, err
	}
	b, err := readBase(l.path, key)
	if err != nil {
		return tailRange{}, err
	}
	fl, err := files(l.path)
	if err != nil {
		return tailRange{}, err
	}
	c := newChain(key, b, cp)
	for _, lf := range fl {
		if lf.First != 0 && lf.First < b.First {
			// Left by a retention that stopped between writing the base
			// and deleting the files it replaced.
			l.remove(lf)
			continue
		}
		if lf.First == 0 {
			if err := l.loadCurrent(c, lf); err != nil {
				return tailRange{}, err
			}
			continue
		}
		if s, ok := readSeal(lf, key); ok && s.Prev == c.prev && s.First == c.expect {
			c.skip(s)
			continue
		}
		s, err := l.verifyRotated(c, lf)
		if err != nil {
			return tailRange{}, err
		}
		if err := c.err(); err != nil {
			return tailRange{}, err
		}
		if err := writeSeal(lf, key, s); err != nil {
			return tailRange{}, err
		}
	}
	l.seq, l.head = c.expect-1, c.prev
	if !hasCP && l.seq >= b.First {
		return tailRange{}, fmt.Errorf("%w: %s has records but no checkpoint %s", ErrTampered, l.path, checkpointPath(l.path))
	}
	c.end(l.path)
	if err := c.err(); err != nil {
		return tailRange{}, err
	}
	if !hasCP {
		// The first checkpoint (seq 0), written whole or not at all.
		if err := atomicfile.Write(checkpointPath(l.path), checkpointSlot(key, 0, genesis), 0o600); err != nil {
			return tailRange{}, fmt.Errorf("audit checkpoint: %w", err)
		}
	}
	l.cp, err = openCheckpoint(l.path, key, 1-slot, !l.opts.NoSync)
	if err != nil {
		return tailRange{}, err
	}
	l.synced, l.durable, l.durableHead = cp.Seq, cp.Seq, cp.Hash
	l.f, err = openAppend(l.path)
	if err != nil {
		l.cp.f.Close()
		return tailRange{}, fmt.Errorf("audit log: %w", err)
	}
	return c.tail, nil
}

// verifyRotated reads a rotated file through the chain and returns the
// seal it has earned if the chain reports no problem.
func (l *Log) verifyRotated(c *chain, lf logFile) (seal, error) {
	s := seal{First: lf.First, Prev: c.prev}
	n := 0
	err := eachLineOf(lf, func(ln line) error {
		if !ln.complete {
			c.add(Problem{File: ln.file, Line: ln.num, What: "incomplete record at the end of a rotated file"})
			return nil
		}
		r, ok := c.next(ln)
		if ok && n == 0 && r.Seq != lf.First {
			c.add(Problem{File: ln.file, Line: ln.num, Seq: r.Seq, What: fmt.Sprintf("first record of a file named for record %d: records moved between files", lf.First)})
		}
		n++
		return nil
	})
	if err != nil {
		return s, err
	}
	if n == 0 {
		c.add(Problem{File: lf.Path, What: "rotated file is empty: its records were deleted"})
	}
	s.Last, s.Hash, s.Keyed = c.expect-1, c.prev, c.keyed
	return s, nil
}

// loadCurrent reads the current file through the chain, cutting off an
// incomplete last line (never acknowledged: it was not synced whole).
func (l *Log) loadCurrent(c *chain, lf logFile) error {
	err := eachLineOf(lf, func(ln line) error {
		if !ln.complete {
			l.log.Warn("audit log: cutting off an incomplete last line left by a crash", "file", lf.Path, "bytes", len(ln.text))
			if err := os.Truncate(lf.Path, l.size); err != nil {
				return fmt.Errorf("audit log: repair %s: %w", lf.Path, err)
			}
			return nil
		}
		prev := c.prev
		r, ok := c.next(ln)
		if ok && l.first == 0 {
			l.first, l.firstPrev = r.Seq, prev
		}
		l.size += int64(len(ln.text)) + 1
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// remove deletes a rotated file and its seal.
func (l *Log) remove(lf logFile) {
	for _, p := range []string{lf.Path, sealPath(lf.Path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.log.Warn("audit log retention: cannot delete", "file", p, "err", err)
		}
	}
}

// Append writes r as the next record: it sets r.Seq, r.Prev and r.Hash
// (and r.Time, in UTC, if zero) and returns once the record and the
// checkpoint are durable. On error the record may or may not be in the
// log, but the call it describes must be refused; Err reports the failure
// until an Append succeeds again.
func (l *Log) Append(r *Record) error {
	seq, _, err := l.append(r, false)
	if err != nil {
		return err
	}
	return l.sync(seq)
}

// AppendDeferred writes r as the next record, in order with every other,
// as Append does, but returns once it is written, before it is durable:
// it becomes durable with the next Append's fsync or within
// Options.DeferredSync, whichever comes first, and Close makes it durable
// too. It is for records of calls that changed nothing (an allowed read),
// whose loss in a crash of the machine within that bound loses no account
// of a change; a crash of the process alone loses nothing written. While
// Err reports a failure it is an Append: only a sync that succeeds clears
// the failure.
func (l *Log) AppendDeferred(r *Record) error {
	seq, failing, err := l.append(r, false)
	switch {
	case err != nil:
		return err
	case failing:
		return l.sync(seq)
	}
	select {
	case l.kick <- struct{}{}:
	default: // a flush is already due, and will cover r
	}
	return nil
}

// append writes r as the next record and returns its seq, and whether the
// log reported a failure before it. With pending, r is an early record:
// it is marked pending under the same lock that writes it, so no
// checkpoint can name it in between.
func (l *Log) append(r *Record, pending bool) (uint64, bool, error) {
	bound(r)
	if r.Time.IsZero() {
		r.Time = l.opts.Now()
	}
	r.Time = r.Time.UTC()
	l.mu.Lock()
	failing := l.err != nil
	for {
		if l.closed {
			l.mu.Unlock()
			return 0, false, ErrClosed
		}
		r.Seq, r.Prev, r.V = l.seq+1, l.head, versionKeyed
		line, hash, err := encode(r, l.key)
		if err != nil {
			l.mu.Unlock()
			return 0, false, err
		}
		if l.opts.MaxSize > 0 && l.size > 0 && l.size+int64(len(line)) > l.opts.MaxSize {
			// Rotation takes syncMu and cpMu, which are taken before mu.
			l.mu.Unlock()
			l.syncMu.Lock()
			l.cpMu.Lock()
			l.mu.Lock()
			err := l.rotate(int64(len(line)))
			l.cpMu.Unlock()
			l.syncMu.Unlock()
			if err != nil {
				l.mu.Unlock()
				return 0, false, err
			}
			continue // re-encode: another Append may have run meanwhile
		}
		if err := l.write(line); err != nil {
			l.mu.Unlock()
			return 0, false, err
		}
		if l.first == 0 {
			l.first, l.firstPrev = r.Seq, r.Prev
		}
		l.seq, l.head, r.Hash = r.Seq, hash, hash
		if pending {
			l.pending[r.Seq] = r.Prev
		}
		break
	}
	seq := l.seq
	l.mu.Unlock()
	return seq, failing, nil
}

// maxReason and maxPath bound the longer strings of a record; every other
// string is bounded by clip.Max.
const (
	maxReason = 1024
	maxPath   = 1024
)

// bound clips every string of r a client may have chosen (a tool name, a
// request id, a path, a reason quoting them), so a record stays a few KiB
// whatever a call sent: clip keeps each one's head, length and hash.
func bound(r *Record) {
	for _, f := range []*string{&r.RequestID, &r.Session, &r.Transport, &r.Remote, &r.Identity, &r.Auth,
		&r.Serial, &r.TokenID, &r.Stage, &r.Tool, &r.Status, &r.Error} {
		*f = clip.String(*f)
	}
	r.Reason = clip.N(r.Reason, maxReason)
	if len(r.Paths) > MaxPaths {
		r.MorePaths += len(r.Paths) - MaxPaths
		r.Paths = r.Paths[:MaxPaths]
	}
	if slices.ContainsFunc(r.Paths, func(p string) bool { return len(p) > maxPath }) {
		r.Paths = slices.Clone(r.Paths) // the caller's slice stays as it was
		for i, p := range r.Paths {
			r.Paths[i] = clip.N(p, maxPath)
		}
	}
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

// rotate renames a current file that cannot take another n bytes, seals
// it, starts a new one and applies the retention. The checkpoint is
// brought up to the renamed file's last record first, so it points into a
// sealed file only while an early record of it is not settled. syncMu,
// cpMu and mu are held.
func (l *Log) rotate(n int64) error {
	if l.size == 0 || l.size+n <= l.opts.MaxSize {
		return nil // another Append rotated already
	}
	if err := l.syncFile(l.f); err != nil {
		return l.fail(err)
	}
	l.durable, l.durableHead = l.seq, l.head
	if target, head := l.cpTarget(); l.synced < target {
		if err := l.cp.write(target, head); err != nil {
			return l.fail(err)
		}
		l.synced = target
	}
	if err := l.f.Close(); err != nil {
		return l.fail(fmt.Errorf("audit log: close for rotation: %w", err))
	}
	rotated := logFile{Path: rotatedName(l.path, l.first), First: l.first}
	var f file
	err := os.Rename(l.path, rotated.Path)
	if err == nil {
		f, err = openAppend(l.path)
	}
	if err != nil {
		l.f = brokenFile{err}
		return l.fail(fmt.Errorf("audit log: rotate: %w", err))
	}
	s := seal{First: l.first, Last: l.seq, Prev: l.firstPrev, Hash: l.head, Keyed: true}
	l.f, l.size, l.first, l.firstPrev = f, 0, 0, ""
	if !l.opts.NoSync {
		if err := atomicfile.SyncDir(filepath.Dir(l.path)); err != nil {
			return l.fail(fmt.Errorf("audit log: sync directory: %w", err))
		}
	}
	// A missing seal costs the next Open a read of the file, nothing more.
	if err := writeSeal(rotated, l.key, s); err != nil {
		l.log.Warn("audit log: cannot seal a rotated file", "file", rotated.Path, "err", err)
	}
	if err := l.retain(); err != nil {
		l.log.Warn("audit log retention failed", "err", err)
	}
	return nil
}

// syncFile makes f durable, unless NoSync is set.
func (l *Log) syncFile(f file) error {
	if l.opts.NoSync {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("audit log: sync: %w", err)
	}
	return nil
}

// sync returns once record seq is durable and checkpointed. Appends that
// arrive while a sync runs wait and are covered by the next one, so
// concurrent appends share fsyncs. The file's sync and the checkpoint's
// are two stages: while one group's checkpoint is flushed, the next
// group's records already are, and the checkpoint names only records a
// finished sync made durable, as it did when both were one stage.
func (l *Log) sync(seq uint64) error {
	if err := l.syncLog(seq); err != nil {
		return err
	}
	return l.checkpoint(seq, true)
}

// syncLog returns once record seq is durable, syncing the current file
// unless a sync since seq was written did.
func (l *Log) syncLog(seq uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	f, target, head, durable := l.f, l.seq, l.head, l.durable
	l.mu.Unlock()
	if durable >= seq {
		return nil
	}
	// Rotation needs syncMu, so the current file stays the same while it
	// is synced; records already rotated away were synced by rotate.
	if err := l.syncFile(f); err != nil {
		return l.failLocked(err)
	}
	l.mu.Lock()
	l.durable, l.durableHead = target, head
	l.mu.Unlock()
	return nil
}

// checkpoint brings the checkpoint up to record seq, which is durable,
// or as far as it may go: never past an early record not settled yet.
// With wait it returns once the checkpoint is at or past seq, waiting
// for early records before seq to be settled; without, it writes what it
// may and returns.
func (l *Log) checkpoint(seq uint64, wait bool) error {
	l.cpMu.Lock()
	defer l.cpMu.Unlock()
	for l.synced < seq {
		l.mu.Lock()
		target, head := l.cpTarget()
		l.mu.Unlock()
		if target > l.synced {
			if err := l.cp.write(target, head); err != nil {
				return l.failLocked(err)
			}
			l.synced = target
			continue
		}
		if !wait {
			return nil
		}
		l.cpSettled.Wait()
	}
	return nil
}

// cpTarget returns the last record the checkpoint may name, and its
// hash: the last durable record, or the one before the first early record
// not settled. mu is held.
func (l *Log) cpTarget() (uint64, string) {
	target, head := l.durable, l.durableHead
	for seq, prev := range l.pending {
		if seq <= target {
			target, head = seq-1, prev
		}
	}
	return target, head
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

// Close makes every record durable and checkpointed (deferred ones too),
// stops the flusher and closes the log. Appends after Close fail with
// ErrClosed.
func (l *Log) Close() error {
	// The flusher takes syncMu: stop it before taking the locks.
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.cpMu.Lock()
	defer l.cpMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.syncFile(l.f)
	if err == nil {
		l.durable, l.durableHead = l.seq, l.head
		if target, head := l.cpTarget(); l.synced < target {
			err = l.cp.write(target, head)
		}
	}
	return errors.Join(err, l.f.Close(), l.cp.f.Close(), l.lock.Close())
}

// flusher makes deferred records durable: woken by a deferred append, it
// waits Options.DeferredSync and syncs up to the last record, unless an
// Append's sync covered them meanwhile (sync then does nothing). Woken by
// an early append, it syncs the file at once, so the record is durable by
// the time its change has committed. A failed sync is the log's sticky
// error, which makes callers refuse calls, as a failed Append does. It
// never waits for an early record to be settled. It runs from Open until
// Close.
func (l *Log) flusher() {
	defer close(l.done)
	t := time.NewTimer(l.opts.DeferredSync)
	t.Stop()
	armed := false
	for {
		select {
		case <-l.stop:
			t.Stop()
			return
		case <-l.kick:
			if !armed {
				t.Reset(l.opts.DeferredSync)
				armed = true
			}
			continue
		case <-l.now:
			if err := l.syncLog(l.last()); err != nil {
				l.log.Error("audit log: early records not made durable; calls are refused until an append succeeds", "err", err)
			}
			continue
		case <-t.C:
			armed = false
		}
		seq := l.last()
		err := l.syncLog(seq)
		if err == nil {
			err = l.checkpoint(seq, false)
		}
		if err != nil {
			l.log.Error("audit log: deferred records not made durable; calls are refused until an append succeeds", "err", err)
		}
	}
}

// last returns the seq of the last record written.
func (l *Log) last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// brokenFile stands in for a current file that could not be reopened after
// a failed rotation: every operation fails with the reason.
type brokenFile struct{ err error }

func (b brokenFile) Write([]byte) (int, error) { return 0, b.err }
func (b brokenFile) Sync() error               { return b.err }
func (b brokenFile) Truncate(int64) error      { return b.err }
func (b brokenFile) Close() error              { return nil }
