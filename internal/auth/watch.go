package auth

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
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

// watch returns o's clock and logger, defaults applied (o may be nil), and
// the watched file at path.
func (o *FileOptions) watch(path string) (func() time.Time, *slog.Logger, watchedFile) {
	var opts FileOptions
	if o != nil {
		opts = *o
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultRecheck
	}
	opts.Logger = cmp.Or(opts.Logger, slog.Default())
	return opts.Now, opts.Logger, watchedFile{path: path, recheck: opts.Recheck}
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

	key     fileKey
	sum     [sha256.Size]byte
	readAt  time.Time
	started bool
}

// poll returns the file's content and true when it differs from what the
// previous poll returned (always on the first), or nil and false when it is
// unchanged. A missing file is an error wrapping fs.ErrNotExist.
func (w *watchedFile) poll(now time.Time) ([]byte, bool, error) {
	key, err := statKey(w.path)
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

func statKey(path string) (fileKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileKey{}, err
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
