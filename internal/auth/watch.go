package auth

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultRecheck is how often a watched file is read again even though its
// size, modification time and inode look unchanged, to catch a rewrite
// within the filesystem's timestamp granularity.
const DefaultRecheck = 2 * time.Second

// FileOptions configure a credential file that is read again when it
// changes: a CRL (OpenCRL) or a tokens file (OpenTokens). The zero value
// works.
type FileOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Recheck is how often the file is read even when a stat shows no
	// change; zero means DefaultRecheck.
	Recheck time.Duration
	// Logger receives reloads and failures; nil means slog.Default().
	Logger *slog.Logger
}

// watched is a credential file parsed into a T, read again when it
// changes. It fails closed: while the file is missing, unreadable or
// refused by parse, get returns why, and the last T parsed stays only to
// judge the next one. It is safe for concurrent use and owns no goroutine.
type watched[T any] struct {
	now func() time.Time
	log *slog.Logger
	// name ("CRL", "tokens") names the file in the log, refusal is the
	// log's message while it is unusable, unreadable wraps an error
	// reading it.
	name, refusal string
	unreadable    error
	// parse reads the file's content, knowing the T parsed before it;
	// loaded returns what the log says of a new T.
	parse  func(data []byte, old T) (T, error)
	loaded func(T) []any

	mu   sync.Mutex
	file watchedFile
	val  T
	err  error // why the file is unusable, nil when val is current
}

// newWatched returns the watched file at path under o (may be nil).
func newWatched[T any](path string, o *FileOptions) *watched[T] {
	var opts FileOptions
	if o != nil {
		opts = *o
	}
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultRecheck
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &watched[T]{now: opts.Now, log: cmp.Or(opts.Logger, slog.Default()),
		file: watchedFile{path: path, recheck: opts.Recheck}}
}

// get returns the file's T and the time it was checked at, reading the
// file first if it changed, or whatever its stat says when force is set.
func (w *watched[T]) get(force bool) (T, time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if force {
		w.file.started = false
	}
	data, changed, err := w.file.poll(now)
	if err != nil {
		err = fmt.Errorf("%w: %w", w.unreadable, err)
	} else if changed {
		var v T
		if v, err = w.parse(data, w.val); err == nil {
			w.val, w.err = v, nil
			w.log.Info(w.name+" loaded", append([]any{strings.ToLower(w.name), w.file.path}, w.loaded(v)...)...)
		}
	}
	if err != nil {
		if w.err == nil || w.err.Error() != err.Error() {
			w.log.Error(w.refusal, strings.ToLower(w.name), w.file.path, "err", err)
		}
		w.err = err
		w.file.started = false // re-read the file whole once it is fixed
	}
	return w.val, now, w.err
}

// maxWatchedBytes bounds a CRL or tokens file.
const maxWatchedBytes = 64 << 20

// fileKey is what a cheap stat says about a file's version.
type fileKey struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

// watchedFile notices when a file changes, checked lazily by its user:
// every check costs one stat; the file is read only when the stat differs
// or Recheck has passed, and reported as changed only when its SHA-256
// differs. It has no goroutine and is not safe for concurrent use; its
// owner locks.
type watchedFile struct {
	path    string
	recheck time.Duration
	private bool // refuse the file while group or others may write it

	key     fileKey
	sum     [sha256.Size]byte
	readAt  time.Time
	started bool
}

// poll returns the file's content and true when it differs from what the
// previous poll returned (always on the first), or nil and false when it is
// unchanged. A missing file is an error wrapping fs.ErrNotExist.
func (w *watchedFile) poll(now time.Time) ([]byte, bool, error) {
	key, err := w.stat()
	if err != nil {
		w.started = false
		return nil, false, err
	}
	if w.started && key == w.key && now.Sub(w.readAt) < w.recheck {
		return nil, false, nil
	}
	data, err := readLimited(w.path)
	if err != nil {
		w.started = false
		return nil, false, err
	}
	sum := sha256.Sum256(data)
	changed := !w.started || sum != w.sum
	w.key, w.sum, w.readAt, w.started = key, sum, now, true
	if !changed {
		return nil, false, nil
	}
	return data, true, nil
}

func (w *watchedFile) stat() (fileKey, error) {
	fi, err := os.Stat(w.path)
	if err != nil {
		return fileKey{}, err
	}
	if w.private && fi.Mode().Perm()&0o022 != 0 {
		return fileKey{}, fmt.Errorf("%s is writable by group or others (mode %v): chmod 600 it", w.path, fi.Mode().Perm())
	}
	k := fileKey{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.dev, k.ino = uint64(st.Dev), st.Ino
	}
	return k, nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxWatchedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxWatchedBytes {
		return nil, fmt.Errorf("read %s: %w", path, errTooLarge)
	}
	return data, nil
}

var errTooLarge = errors.New("file larger than 64 MiB")
