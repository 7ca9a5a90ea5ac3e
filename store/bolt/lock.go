package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrLocked reports a database another process has open: bbolt allows one
// process per file. Open returns it inside a *LockedError.
var ErrLocked = errors.New("database is locked")

// LockedError names the process holding a database, as far as its lock
// file (DB.lock, beside the database) and /proc tell.
type LockedError struct {
	Path    string // the database
	PID     int    // the holder, 0 when unknown (a program that is not depotfs)
	Command string // its command line, "" when unknown
}

func (e *LockedError) Error() string {
	switch {
	case e.PID == 0:
		return fmt.Sprintf("%s: %v by another process (not a depotfs: it left no pid in %s)", e.Path, ErrLocked, lockPath(e.Path))
	case e.Command == "":
		return fmt.Sprintf("%s: %v by pid %d", e.Path, ErrLocked, e.PID)
	}
	return fmt.Sprintf("%s: %v by pid %d (%s)", e.Path, ErrLocked, e.PID, e.Command)
}

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

func lockPath(db string) string { return db + ".lock" }

// openLocked takes the database's holder lock, a flock on DB.lock that
// records this process's pid, then opens the database with bbolt (whose
// own flock on the file stays the real guard, also against programs that
// are not depotfs). The holder lock is released with the returned file.
func openLocked(path string, opts *bbolt.Options) (*bbolt.DB, *os.File, error) {
	lf, err := os.OpenFile(lockPath(path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("lock file: %w", err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lf.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil, holder(path)
		}
		return nil, nil, fmt.Errorf("lock file: %w", err)
	}
	db, err := bbolt.Open(path, 0o600, opts)
	if err != nil {
		lf.Close()
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, nil, &LockedError{Path: path}
		}
		return nil, nil, err
	}
	err = lf.Truncate(0)
	if err == nil {
		_, err = lf.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		db.Close()
		lf.Close()
		return nil, nil, fmt.Errorf("lock file: %w", err)
	}
	return db, lf, nil
}

// holder describes the process holding path's lock.
func holder(path string) *LockedError {
	e := &LockedError{Path: path}
	b, err := os.ReadFile(lockPath(path))
	if err != nil {
		return e
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || pid <= 0 {
		return e
	}
	e.PID = pid
	if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
		e.Command = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		if len(e.Command) > 200 {
			e.Command = e.Command[:200] + "…"
		}
	}
	return e
}
