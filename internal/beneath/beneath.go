package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLink reports a symbolic link where a file or directory was to be
// opened.
var ErrLink = errors.New("is a symbolic link")

// ErrName reports a name that is not relative, clean and slash-separated
// (empty, absolute, or with an empty, "." or ".." component).
var ErrName = errors.New("not a clean relative name")

// Stat is what fstat tells of a file: its type and permissions, size,
// modification and change times, and identity.
type Stat struct {
	Mode  fs.FileMode
	Size  int64
	MTime time.Time
	CTime time.Time
	Dev   uint64
	Ino   uint64
}

// Same reports whether s and t describe the same file in the same state:
// same identity, type, size, modification and change time. A write, a
// truncation, a chmod or a rename over the file changes one of them.
func (s Stat) Same(t Stat) bool {
	return s.Dev == t.Dev && s.Ino == t.Ino && s.Mode == t.Mode && s.Size == t.Size &&
		s.MTime.Equal(t.MTime) && s.CTime.Equal(t.CTime)
}

// fileTypes are the fs.FileMode bits of each file type of st_mode but a
// regular file.
var fileTypes = map[uint32]fs.FileMode{unix.S_IFDIR: fs.ModeDir, unix.S_IFLNK: fs.ModeSymlink, unix.S_IFIFO: fs.ModeNamedPipe,
	unix.S_IFSOCK: fs.ModeSocket, unix.S_IFCHR: fs.ModeDevice | fs.ModeCharDevice, unix.S_IFBLK: fs.ModeDevice}

func fromUnix(st *unix.Stat_t) Stat {
	return Stat{
		Mode:  fs.FileMode(st.Mode&0o777) | fileTypes[st.Mode&unix.S_IFMT],
		Size:  st.Size,
		MTime: time.Unix(st.Mtim.Unix()),
		CTime: time.Unix(st.Ctim.Unix()),
		Dev:   uint64(st.Dev),
		Ino:   st.Ino,
	}
}

// Fstat returns what fstat tells of f.
func Fstat(f *os.File) (Stat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return Stat{}, &fs.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return fromUnix(&st), nil
}

// Open opens name, a clean slash-separated path relative to dir, for
// reading, without following a symbolic link: every directory on the way
// is opened relative to the one before it with O_DIRECTORY|O_NOFOLLOW, and
// name itself with O_NOFOLLOW, so a link at any step fails with an error
// wrapping ErrLink. The file is opened with O_NONBLOCK, so that a FIFO put
// in its place cannot hang the open; the caller checks the type with
// Fstat. The returned file's Name is name.
func Open(dir *os.File, name string) (*os.File, error) {
	parts, err := split(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	root := int(dir.Fd())
	fd := root
	for i, part := range parts {
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		next, err := openat(fd, part, flags)
		if fd != root {
			unix.Close(fd)
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: strings.Join(parts[:i+1], "/"), Err: err}
		}
		fd = next
	}
	return os.NewFile(uintptr(fd), name), nil
}

// openat is openat(2), retried on EINTR, with a link met reported as
// ErrLink: O_NOFOLLOW fails with ELOOP on a link, and O_DIRECTORY with
// ENOTDIR before it when the link's target is not a directory, so both are
// told apart from a real non-directory with an lstat of the name.
func openat(dir int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ELOOP || err == unix.ENOTDIR:
			var st unix.Stat_t
			if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return -1, ErrLink
			}
		}
		return fd, err
	}
}

// split checks that name is clean and relative and returns its components.
func split(name string) ([]string, error) {
	parts := strings.Split(name, "/")
	if slices.ContainsFunc(parts, func(p string) bool { return p == "" || p == "." || p == ".." }) {
		return nil, ErrName
	}
	return parts, nil
}

// WalkFunc is called by Walk for every entry below the walked directory,
// with its clean slash-separated name relative to it and what lstat tells
// of it. fs.SkipDir for a directory skips what it holds; any other
// non-nil error stops the walk, and Walk returns it.
type WalkFunc func(name string, st Stat) error

// Walk calls fn for every entry below dir, in lexical order, each
// directory before what it holds. It descends only into directories it
// opened relative to their parent with O_DIRECTORY|O_NOFOLLOW and found to
// be the directory fn was told of: a directory replaced by a link, or by
// another directory, during the walk fails it with an error (wrapping
// ErrLink for a link). Links and special files are passed to fn and never
// followed.
func Walk(dir *os.File, fn WalkFunc) error {
	fd, err := openat(int(dir.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir.Name(), Err: err}
	}
	return walk(os.NewFile(uintptr(fd), dir.Name()), "", fn)
}

// walk walks the open directory d, whose name relative to the walk's root
// is prefix, and closes it.
func walk(d *os.File, prefix string, fn WalkFunc) error {
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return &fs.PathError{Op: "readdir", Path: prefix, Err: err}
	}
	slices.Sort(names)
	fd := int(d.Fd())
	for _, name := range names {
		rel := path.Join(prefix, name) // name is neither "." nor ".."
		var ust unix.Stat_t
		if err := unix.Fstatat(fd, name, &ust, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &fs.PathError{Op: "lstat", Path: rel, Err: err}
		}
		st := fromUnix(&ust)
		err := fn(rel, st)
		if errors.Is(err, fs.SkipDir) && st.Mode.IsDir() {
			continue
		}
		if err != nil {
			return err
		}
		if !st.Mode.IsDir() {
			continue
		}
		sub, err := openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
		if err != nil {
			return &fs.PathError{Op: "open", Path: rel, Err: err}
		}
		f := os.NewFile(uintptr(sub), rel)
		now, err := Fstat(f)
		if err == nil && (now.Dev != st.Dev || now.Ino != st.Ino) {
			err = &fs.PathError{Op: "open", Path: rel, Err: errors.New("replaced by another directory during the walk")}
		}
		if err != nil {
			f.Close()
			return err
		}
		if err := walk(f, rel, fn); err != nil {
			return err
		}
	}
	return nil
}
