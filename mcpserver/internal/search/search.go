package search

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"unicode/utf8"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// Limits and defaults of a Query.
const (
	// DefaultMaxResults is the number of matching lines a zero
	// Query.MaxResults returns.
	DefaultMaxResults = 100
	// DefaultMaxFileSize is the largest file a zero Query.MaxFileSize
	// searches.
	DefaultMaxFileSize = 10 << 20
	// MaxLineBytes bounds the text of a line in a result; longer lines are
	// cut (on a character boundary).
	MaxLineBytes = 1024
	// BinaryProbe is how much of a file is looked at for a NUL byte to
	// call it binary (as git and grep do); fs read uses it too.
	BinaryProbe = 8000
)

// Query is one search. The zero values of its limits mean their defaults.
// Run does not change a Query; one may be shared by concurrent searches if
// its Files function is safe for concurrent use (Run calls it from one
// goroutine per search).
type Query struct {
	// Root is the clean depot path of the directory to search.
	Root string
	// Recursive searches every directory below Root, not only its files.
	Recursive bool
	// Pattern is what to look for.
	Pattern *Pattern
	// Files, when not nil, chooses the files to search by name.
	Files func(name string) bool
	// ContextLines is how many lines before and after each match to
	// return with it.
	ContextLines int
	// MaxResults is the number of matching lines after which the search
	// stops; Result.Truncated then says so.
	MaxResults int
	// MaxFileSize skips larger files.
	MaxFileSize int64
	// Workers is how many files are searched at once; 0 means GOMAXPROCS.
	Workers int
}

// Result is what a search found, in walk order (depth first, names in
// byte order). It is a plain value owned by the caller.
type Result struct {
	Files         []File
	TotalMatches  int // matching lines returned
	FilesSearched int // files whose content was searched
	FilesMatched  int // files with at least one match
	// Skipped files: binary, larger than MaxFileSize, or whose content
	// has not arrived.
	SkippedBinary, SkippedLarge, SkippedAbsent int
	// Truncated reports that MaxResults stopped the search: more matches
	// may exist.
	Truncated bool
}

// File is the matches in one file.
type File struct {
	Path    string // clean depot path
	Matches []Match
}

// Match is one matching line.
type Match struct {
	Line    int    // 1-based line number
	Text    string // the line, without its newline
	Context []Line // with ContextLines > 0: the lines around it, itself included
}

// Line is one line of context.
type Line struct {
	Number int
	Text   string
}

// job is one file to search, with its position in the walk.
type job struct {
	index int
	entry store.Entry
}

// skip says why a file was not searched.
type skip uint8

const (
	searched skip = iota
	skipBinary
	skipLarge
	skipAbsent
)

// outcome is what searching one file gave.
type outcome struct {
	index int
	file  File
	skip  skip
	err   error
}

// Reader is what Run needs of a store: listings and content. store.Store
// implements it, and so does any view of a store that checks permissions
// first.
type Reader interface {
	ReadDir(ctx context.Context, dir string) ([]store.Entry, error)
	Open(ctx context.Context, path string) (store.Content, error)
}

// Run searches the files below q.Root. It returns an error wrapping
// store.ErrNotExist or store.ErrNotDir when Root is not a directory, and
// ctx's error when ctx ends first. Run is safe for concurrent use; its
// goroutines have all returned when it does.
func Run(ctx context.Context, st Reader, q Query) (Result, error) {
	if q.Pattern == nil {
		return Result{}, fmt.Errorf("search: %w: no pattern", ErrPattern)
	}
	q.MaxResults = cmp.Or(max(q.MaxResults, 0), DefaultMaxResults)
	q.MaxFileSize = cmp.Or(max(q.MaxFileSize, 0), DefaultMaxFileSize)
	q.Workers = cmp.Or(max(q.Workers, 0), runtime.GOMAXPROCS(0))
	top, err := st.ReadDir(ctx, q.Root)
	if err != nil {
		return Result{}, fmt.Errorf("search %s: %w", q.Root, err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var res Result
	jobs := make(chan job, 4*q.Workers)
	outcomes := make(chan outcome, 4*q.Workers)
	// The walker is one of the workers: outcomes close once it and the
	// searchers are done, so walkErr is set when the collection ends.
	var walkErr error
	var workers sync.WaitGroup
	workers.Go(func() {
		defer close(jobs)
		walkErr = walk(ctx, st, top, q, jobs)
	})
	for range q.Workers {
		workers.Go(func() {
			w := worker{st: st, q: &q}
			for j := range jobs {
				if ctx.Err() != nil {
					continue // stopped: drain what the walker queued
				}
				o := w.search(ctx, j)
				select {
				case outcomes <- o:
				case <-ctx.Done():
				}
			}
		})
	}
	go func() {
		workers.Wait()
		close(outcomes)
	}()

	// Collect in walk order: outcomes that arrive early wait in pending
	// until every file before them is in, so the result does not depend
	// on scheduling even when MaxResults stops the search.
	pending := map[int]outcome{}
	next := 0
	var firstErr error
	for o := range outcomes {
		pending[o.index] = o
		for {
			o, ok := pending[next]
			if !ok || res.Truncated || firstErr != nil {
				break
			}
			delete(pending, next)
			next++
			if o.err != nil {
				firstErr = o.err
				cancel()
				break
			}
			if res.add(o, q.MaxResults) {
				res.Truncated = true
				cancel()
			}
		}
	}
	switch {
	case firstErr != nil:
		return Result{}, firstErr
	case walkErr != nil && !res.Truncated:
		return Result{}, walkErr
	case !res.Truncated && ctx.Err() != nil:
		return Result{}, ctx.Err()
	}
	return res, nil
}

// add counts one file's outcome into r and reports whether max matches
// have been reached (the file's matches are cut to fit).
func (r *Result) add(o outcome, max int) bool {
	switch o.skip {
	case skipBinary:
		r.SkippedBinary++
		return false
	case skipLarge:
		r.SkippedLarge++
		return false
	case skipAbsent:
		r.SkippedAbsent++
		return false
	}
	r.FilesSearched++
	if len(o.file.Matches) == 0 {
		return false
	}
	if room := max - r.TotalMatches; len(o.file.Matches) > room {
		o.file.Matches = o.file.Matches[:room]
	}
	r.FilesMatched++
	r.TotalMatches += len(o.file.Matches)
	r.Files = append(r.Files, o.file)
	return r.TotalMatches >= max
}

// walk sends the files below the directory whose entries are top, in
// depth-first name order, until ctx is done.
func walk(ctx context.Context, st Reader, top []store.Entry, q Query, jobs chan<- job) error {
	index := 0
	var visit func(entries []store.Entry) error
	visit = func(entries []store.Entry) error {
		for _, e := range entries {
			if e.IsDir() {
				if !q.Recursive {
					continue
				}
				below, err := st.ReadDir(ctx, e.Path)
				if errors.Is(err, store.ErrNotExist) {
					continue // removed while the search runs
				}
				if err != nil {
					return fmt.Errorf("search %s: %w", e.Path, err)
				}
				if err := visit(below); err != nil {
					return err
				}
				continue
			}
			if q.Files != nil && !q.Files(depotpath.Base(e.Path)) {
				continue
			}
			select {
			case jobs <- job{index, e}:
				index++
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	return visit(top)
}

// worker searches files one at a time, reusing its buffers.
type worker struct {
	st      Reader
	q       *Query
	buf     []byte
	scratch []byte
}

// search reads and searches one file.
func (w *worker) search(ctx context.Context, j job) outcome {
	o := outcome{index: j.index, file: File{Path: j.entry.Path}}
	if !j.entry.Present {
		o.skip = skipAbsent
		return o
	}
	if j.entry.Size > w.q.MaxFileSize {
		o.skip = skipLarge
		return o
	}
	c, err := w.st.Open(ctx, j.entry.Path)
	switch {
	case errors.Is(err, store.ErrNotExist), errors.Is(err, store.ErrNotPresent), errors.Is(err, store.ErrIsDir):
		o.skip = skipAbsent // changed while the search runs
		return o
	case err != nil:
		o.err = fmt.Errorf("search %s: %w", j.entry.Path, err)
		return o
	}
	defer c.Close()
	size := c.Size()
	if size > w.q.MaxFileSize {
		o.skip = skipLarge
		return o
	}
	if int64(cap(w.buf)) < size {
		w.buf = make([]byte, size)
	}
	buf := w.buf[:size]
	if _, err := io.ReadFull(io.NewSectionReader(c, 0, size), buf); err != nil {
		o.err = fmt.Errorf("search %s: %w", j.entry.Path, err)
		return o
	}
	if bytes.IndexByte(buf[:min(len(buf), BinaryProbe)], 0) >= 0 {
		o.skip = skipBinary
		return o
	}
	line, counted := 1, 0 // line number of buf[counted]
	w.scratch = w.q.Pattern.lines(buf, w.scratch, func(start, end int) bool {
		line += bytes.Count(buf[counted:start], []byte{'\n'})
		counted = start
		m := Match{Line: line, Text: lineText(buf[start:end])}
		if w.q.ContextLines > 0 {
			m.Context = around(buf, start, end, line, w.q.ContextLines)
		}
		o.file.Matches = append(o.file.Matches, m)
		return len(o.file.Matches) < w.q.MaxResults
	})
	return o
}

// around returns the n lines before and after the line [start, end)
// numbered line, that line included.
func around(buf []byte, start, end, line, n int) []Line {
	var before []Line
	s := start
	for i := 1; i <= n && s > 0; i++ {
		prevEnd := s - 1
		prevStart := bytes.LastIndexByte(buf[:prevEnd], '\n') + 1
		before = append(before, Line{line - i, lineText(buf[prevStart:prevEnd])})
		s = prevStart
	}
	out := make([]Line, 0, len(before)+1+n)
	for i := len(before) - 1; i >= 0; i-- {
		out = append(out, before[i])
	}
	out = append(out, Line{line, lineText(buf[start:end])})
	e := end
	for i := 1; i <= n && e < len(buf); i++ {
		nextStart := e + 1
		if nextStart == len(buf) {
			break // the file ends with this newline
		}
		nextEnd := len(buf)
		if k := bytes.IndexByte(buf[nextStart:], '\n'); k >= 0 {
			nextEnd = nextStart + k
		}
		out = append(out, Line{line + i, lineText(buf[nextStart:nextEnd])})
		e = nextEnd
	}
	return out
}

// lineText is a line as a result shows it: without a trailing carriage
// return, cut to MaxLineBytes on a character boundary.
func lineText(b []byte) string {
	b = bytes.TrimSuffix(b, []byte{'\r'})
	if len(b) > MaxLineBytes {
		cut := MaxLineBytes
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		b = b[:cut]
	}
	return string(b)
}
