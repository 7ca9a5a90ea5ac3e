package vfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrMounted reports a mount directory that already has a live filesystem
// mounted on it; Mount refuses to stack another one.
var ErrMounted = errors.New("directory is already a mount point")

// ErrNotEmpty reports a mount directory that has entries, which the mount
// would hide; Mount refuses it unless Options.AllowNonEmpty.
var ErrNotEmpty = errors.New("directory is not empty")

// prepareMountpoint makes dir ready to mount on and returns its absolute,
// symlink-free path. It detaches dead FUSE mounts left by crashed processes
// (and logs that it did), creates dir (0755) if missing, and refuses a
// directory that has a live mount.
func prepareMountpoint(dir string, allowNonEmpty bool, log *slog.Logger) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("mount point %s: %w", dir, err)
	}
	// statfs always asks the filesystem (stat may be answered from the
	// kernel's attribute cache for a second after the server died), so a
	// dead FUSE connection shows up as ENOTCONN, or ECONNABORTED once
	// aborted. Crash loops can stack several; detach them all.
	for {
		var sfs syscall.Statfs_t
		err := syscall.Statfs(abs, &sfs)
		if !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
			break
		}
		log.Warn("vfs: detaching a stale FUSE mount left by a process that exited without unmounting", "dir", abs, "err", err)
		if err := syscall.Unmount(abs, syscall.MNT_DETACH); err != nil {
			return "", fmt.Errorf("mount point %s: detach stale mount: %w", abs, err)
		}
	}
	_, err = os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		err = os.MkdirAll(abs, 0o755)
	}
	if err != nil {
		return "", fmt.Errorf("mount point %s: %w", abs, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("mount point %s: %w", abs, err)
	}
	fstype, mounted, err := mountedAt(real)
	if err != nil {
		return "", fmt.Errorf("mount point %s: %w", real, err)
	}
	if mounted {
		return "", fmt.Errorf("mount point %s: %w (%s); unmount it first", real, ErrMounted, fstype)
	}
	if !allowNonEmpty {
		if err := checkEmpty(real); err != nil {
			return "", err
		}
	}
	return real, nil
}

// checkEmpty refuses a directory with entries, naming one of them.
func checkEmpty(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("mount point %s: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return fmt.Errorf("mount point %s: %w (it holds %q, which the mount would hide); "+
			"choose an empty directory, empty this one, or allow it explicitly (serve --allow-non-empty-mount)", dir, ErrNotEmpty, names[0])
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("mount point %s: %w", dir, err)
	}
	return nil
}

// mountedAt reports whether something is mounted at the absolute path dir,
// and the type of the topmost mount there, from /proc/self/mountinfo.
func mountedAt(dir string) (fstype string, mounted bool, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(pre)
		if !ok || len(fields) < 5 || unescapeMountinfo(fields[4]) != dir {
			continue
		}
		fstype, _, _ = strings.Cut(post, " ")
		mounted = true
	}
	return fstype, mounted, sc.Err()
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) that
// mountinfo uses for whitespace and backslashes in paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
