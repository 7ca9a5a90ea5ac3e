package audit

import (
	"errors"
	"io/fs"
	"os"
)

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
