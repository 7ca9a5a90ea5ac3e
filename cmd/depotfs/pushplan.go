package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/depotfs/depotfs/internal/beneath"
	"github.com/depotfs/depotfs/internal/depotpath"
)

// pushEntry is one directory or regular file of a tree, as the plan saw it.
type pushEntry struct {
	rel string // relative to the tree, slash-separated
	st  beneath.Stat
}

// pushItem is one PATH to push: a file, or a tree of directories and
// files. f is the PATH opened when it was planned, so what is sent is
// what was planned, whatever happens to the name since.
type pushItem struct {
	local   string // as given
	dest    string // the depot path it is stored at
	f       *os.File
	st      beneath.Stat // f's, when it was opened
	entries []pushEntry  // a tree's, each directory before what it holds
	files   int64
	dirs    int64
	bytes   int64
}

// pushPlan is every PATH to push, with the totals for the progress bar.
type pushPlan struct {
	items        []*pushItem
	files, bytes int64
}

// close closes the PATHs the plan holds open.
func (p *pushPlan) close() {
	for _, it := range p.items {
		it.f.Close()
	}
}

// planPush opens every PATH and walks the directories, so that the
// progress bar knows the totals and each PATH's destination is known
// before anything is sent. A PATH named on the command line is followed
// if it is a symbolic link, as cp does; nothing below it is: links and
// special files in a tree are skipped with a warning.
func planPush(paths []string, to string, stderr io.Writer) (*pushPlan, error) {
	plan := &pushPlan{}
	for _, p := range paths {
		item, err := planItem(p, to, stderr)
		if err != nil {
			plan.close()
			return nil, err
		}
		plan.items = append(plan.items, item)
		plan.files += item.files
		plan.bytes += item.bytes
	}
	return plan, nil
}

// pushDest is where PATH p is stored under the depot directory to: at
// to/NAME, where NAME is the last component of p's absolute form, so
// "." and ".." are named after the directories they stand for.
func pushDest(p, to string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	name := filepath.Base(abs)
	if name == string(filepath.Separator) || name == "." || name == ".." {
		return "", fmt.Errorf("%s: has no name to store it under; push the directories below it instead", p)
	}
	if why := unstorable(to, name); why != "" {
		return "", fmt.Errorf("%q: its name cannot be stored as it is: %s; rename it to push it", p, why)
	}
	return path.Join(to, name), nil
}

// unstorable says why the entry rel (a slash-separated name below the
// depot directory dir) cannot be stored under exactly its name, or ""
// when it can. The depot's path rules (depotpath.Clean) refuse some names
// (not UTF-8, control characters) and store others under another name (a
// backslash becomes a directory separator, a decomposed name is composed);
// push never renames, so such an entry is skipped, named in a warning.
func unstorable(dir, rel string) string {
	name := path.Base(rel)
	clean, err := depotpath.CleanName(name)
	var pe *depotpath.Error
	switch {
	case strings.Contains(name, `\`):
		return "a backslash, which the depot takes for a directory separator"
	case errors.As(err, &pe):
		return pe.Reason
	case err != nil:
		return err.Error()
	case clean != name:
		return "not in Unicode NFC (decomposed, as macOS writes names), and the depot stores names composed"
	}
	if _, err := depotpath.Clean(dir + "/" + rel); errors.As(err, &pe) {
		return pe.Reason
	}
	return ""
}

func planItem(p, to string, stderr io.Writer) (*pushItem, error) {
	dest, err := pushDest(p, to)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO named as PATH is refused, not waited on.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := beneath.Fstat(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	item := &pushItem{local: p, dest: dest, f: f, st: st}
	switch {
	case st.Mode.IsRegular():
		item.files, item.bytes = 1, st.Size
	case st.Mode.IsDir():
		err := beneath.Walk(f, func(rel string, st beneath.Stat) error {
			if why := unstorable(dest, rel); why != "" {
				what := "skipping"
				if st.Mode.IsDir() {
					what = "skipping the directory"
				}
				fmt.Fprintf(stderr, "depotfs push: %s %q: its name cannot be stored as it is (%s); rename it to push it\n", what, filepath.Join(p, filepath.FromSlash(rel)), why)
				if st.Mode.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			switch {
			case st.Mode.IsDir():
				item.dirs++
			case st.Mode.IsRegular():
				item.files++
				item.bytes += st.Size
			default:
				fmt.Fprintf(stderr, "depotfs push: skipping %s: not a regular file or a directory (%s)\n", filepath.Join(p, filepath.FromSlash(rel)), typeName(st.Mode))
				return nil
			}
			item.entries = append(item.entries, pushEntry{rel: rel, st: st})
			return nil
		})
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	default:
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file or a directory (%s)", p, typeName(st.Mode))
	}
	return item, nil
}

// typeName names the type of a file mode for a message.
func typeName(m fs.FileMode) string {
	return cmp.Or(map[fs.FileMode]string{
		fs.ModeSymlink: "a symbolic link", fs.ModeNamedPipe: "a FIFO", fs.ModeSocket: "a socket", fs.ModeDir: "a directory",
		fs.ModeDevice: "a device", fs.ModeDevice | fs.ModeCharDevice: "a device", 0: "a regular file",
	}[m.Type()], m.Type().String())
}

// errChanged reports a file that changed between planning and sending, or
// while it was sent; the message says which.
var errChanged = errors.New("changed under depotfs push")

// openEntry opens the tree entry e of item for sending, relative to the
// tree opened when it was planned and following no link, and checks that
// it is still the regular file the plan saw.
func openEntry(item *pushItem, e pushEntry) (*os.File, beneath.Stat, error) {
	f, err := beneath.Open(item.f, e.rel)
	if err != nil {
		if errors.Is(err, beneath.ErrLink) {
			return nil, beneath.Stat{}, fmt.Errorf("%w since it planned: %w; nothing below a pushed directory is followed", errChanged, err)
		}
		return nil, beneath.Stat{}, err
	}
	st, err := beneath.Fstat(f)
	if err == nil && !st.Mode.IsRegular() {
		err = fmt.Errorf("%w since it planned: %s is %s now, it was a regular file", errChanged, e.rel, typeName(st.Mode))
	}
	if err != nil {
		f.Close()
		return nil, beneath.Stat{}, err
	}
	return f, st, nil
}
