package audit

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// seqDigits is the width of the sequence number in a rotated file's name.
const seqDigits = 20

// rotatedName is the name a full log file gets: the log's name and the seq
// of its first record.
func rotatedName(path string, first uint64) string {
	return fmt.Sprintf("%s.%0*d", path, seqDigits, first)
}

// logFile is one file of a log: a rotated one, or the current one (First 0).
type logFile struct {
	Path  string
	First uint64 // the seq its name gives; 0 for the current file
}

// files lists the log's files in chain order: rotated files by the seq in
// their names, then the current file if it exists.
func files(path string) ([]logFile, error) {
	dir, base := filepath.Split(path)
	dir = cmp.Or(dir, ".")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("audit log directory: %w", err)
	}
	var out []logFile
	current := false
	for _, e := range entries {
		name := e.Name()
		if name == base {
			current = true
			continue
		}
		rest, ok := strings.CutPrefix(name, base+".")
		n, err := strconv.ParseUint(rest, 10, 64) // digits only: no sign, no '_'
		if !ok || len(rest) != seqDigits || err != nil || n == 0 {
			continue
		}
		out = append(out, logFile{Path: filepath.Join(dir, name), First: n})
	}
	slices.SortFunc(out, func(a, b logFile) int { return cmp.Compare(a.First, b.First) })
	if current {
		out = append(out, logFile{Path: path})
	}
	return out, nil
}

// BackupFiles returns the files of the log at path in the order a copy
// taken while the log is written must read them: the key, the checkpoint,
// the base, the rotated files, then the current file. A checkpoint copied
// before the records can only lag the copied records, which Verify
// accepts (records past the checkpoint are a warning), never lead them,
// which it would report as a truncation. Files that do not exist are left
// out.
func BackupFiles(path string) ([]string, error) {
	fl, err := files(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range []string{keyPath(path), checkpointPath(path), basePath(path)} {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	for _, f := range fl {
		out = append(out, f.Path)
	}
	return out, nil
}
