package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
)

// line is one line of a log file as a reader sees it.
type line struct {
	file     string
	num      int    // 1-based line number in file
	text     []byte // without the newline
	complete bool   // ended with a newline
}

// eachLineOf calls fn for every line of the log file lf. It stops at fn's
// first error and returns it.
func eachLineOf(lf logFile, fn func(line) error) error {
	f, err := os.Open(lf.Path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 {
			complete := b[len(b)-1] == '\n'
			if complete {
				b = b[:len(b)-1]
			}
			if ferr := fn(line{file: lf.Path, num: n, text: b, complete: complete}); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit log: read %s: %w", lf.Path, err)
		}
	}
}

// Scan calls fn with every record of the log at path, oldest first,
// across rotated files. It does not check the chain (Verify does); a line
// that is not a record is an error wrapping ErrRecord that names it.
func Scan(path string, fn func(Record) error) error {
	fl, err := files(path)
	for i := 0; err == nil && i < len(fl); i++ {
		err = eachLineOf(fl[i], func(l line) error {
			if !l.complete {
				return nil // a record being written, or left by a crash
			}
			r, _, err := decode(l.text, nil)
			if err != nil {
				return fmt.Errorf("%s line %d: %w", l.file, l.num, err)
			}
			return fn(r)
		})
	}
	return err
}

// Filter selects records for a query. Zero fields match everything.
type Filter struct {
	// Identity matches a record's identity exactly, or its subject (the
	// identity without its "<transport>:" prefix).
	Identity string
	Tool     string
	// Path matches records with a path within it, on whole components.
	Path     string
	Decision Decision
	Event    string
	// Since and Until bound the record's time: Since <= time < Until.
	Since, Until time.Time
}

// Match reports whether r passes the filter.
func (f Filter) Match(r Record) bool {
	if f.Identity != "" && r.Identity != f.Identity {
		_, subject, ok := strings.Cut(r.Identity, ":")
		if !ok || subject != f.Identity {
			return false
		}
	}
	if f.Tool != "" && r.Tool != f.Tool {
		return false
	}
	if f.Decision != "" && r.Decision != f.Decision {
		return false
	}
	if f.Event != "" && r.Event != f.Event {
		return false
	}
	if !f.Since.IsZero() && r.Time.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !r.Time.Before(f.Until) {
		return false
	}
	return f.Path == "" || slices.ContainsFunc(r.Paths, func(p string) bool { return depotpath.Within(p, f.Path) })
}
