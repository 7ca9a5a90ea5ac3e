package audit

import (
	"fmt"
	"io/fs"
	"os"
)

// retain deletes the oldest rotated files beyond Options.RetainSize
// or older than Options.RetainAge. It first moves the log's base past
// them (the seal of the last one deleted gives the link), so the files
// kept still verify and a deletion by anyone else still shows. A file
// without a valid seal is never deleted, nor anything after it. syncMu,
// cpMu and mu are held.
func (l *Log) retain() error {
	if l.opts.RetainSize <= 0 && l.opts.RetainAge <= 0 {
		return nil
	}
	fl, err := files(l.path)
	if err != nil {
		return err
	}
	var infos []fs.FileInfo // of the rotated files, which come first in fl
	var total int64
	for _, lf := range fl {
		if lf.First == 0 {
			break
		}
		info, err := os.Stat(lf.Path)
		if err != nil {
			return fmt.Errorf("audit log retention: %w", err)
		}
		infos = append(infos, info)
		total += info.Size()
	}
	cutoff := l.opts.Now().Add(-l.opts.RetainAge)
	var drop []logFile
	var last seal
	for i, info := range infos {
		lf := fl[i]
		tooBig := l.opts.RetainSize > 0 && total > l.opts.RetainSize
		tooOld := l.opts.RetainAge > 0 && info.ModTime().Before(cutoff)
		if !tooBig && !tooOld {
			break
		}
		s, ok := readSeal(lf, l.key)
		if !ok {
			l.log.Warn("audit log retention: keeping a rotated file without a valid seal (the next start verifies it)", "file", lf.Path)
			break
		}
		drop, last = append(drop, lf), s
		total -= info.Size()
	}
	if len(drop) == 0 {
		return nil
	}
	if err := writeBase(l.path, l.key, base{First: last.Last + 1, Prev: last.Hash}); err != nil {
		return err
	}
	for _, lf := range drop {
		l.remove(lf)
	}
	l.log.Info("audit log retention: deleted rotated files", "files", len(drop), "log_now_starts_at", last.Last+1)
	return nil
}
