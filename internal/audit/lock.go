package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// ErrLocked reports a log another process has open for writing: two
// writers would interleave sequence numbers and break the chain.
var ErrLocked = errors.New("audit log in use")

func lockPath(log string) string { return log + ".lock" }

// lock takes the log's writer lock (flock on FILE.lock, held until the
// returned file is closed) and writes this process's id into it, so a
// second writer is refused with the holder's pid.
func lock(path string) (*os.File, error) {
	f, err := os.OpenFile(lockPath(path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			b, _ := os.ReadFile(lockPath(path)) // unreadable: no pid, "another process"
			if pid, perr := strconv.Atoi(string(bytes.TrimSpace(b))); perr == nil {
				holder = "pid " + strconv.Itoa(pid)
			}
			return nil, fmt.Errorf("%w: %s is held by %s (another depotfs serve writing the same log)", ErrLocked, path, holder)
		}
		return nil, fmt.Errorf("audit log lock: %w", err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log lock: %w", err)
	}
	return f, nil
}
