package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/depotfs/depotfs/store"
)

// errStopWalk, returned by a walk's visitor, ends the walk without error.
var errStopWalk = errors.New("walk stopped")

// walk visits the entries below the directory dir in depth-first
// pre-order, siblings in name order (the order of Store.ReadDir). When
// recursive is set, it descends into each directory for which visit
// reports true. Each directory is listed in its own read transaction: a
// walk is not one snapshot, and entries changed meanwhile may be seen or
// missed. Errors from the store are wrapped in storeError.
func (s *Server) walk(ctx context.Context, c *call, dir string, recursive bool, visit func(e store.Entry) (descend bool, err error)) error {
	err := s.walkDir(ctx, c, dir, recursive, visit)
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

func (s *Server) walkDir(ctx context.Context, c *call, dir string, recursive bool, visit func(e store.Entry) (bool, error)) error {
	entries, err := c.store.ReadDir(ctx, dir)
	if err != nil {
		return &storeError{op: "readdir", path: dir, err: err}
	}
	for _, e := range entries {
		descend, err := visit(e)
		if err != nil {
			return err
		}
		if recursive && descend && e.IsDir() {
			if err := s.walkDir(ctx, c, e.Path, true, visit); err != nil {
				// A directory removed while the walk runs is skipped.
				if errors.Is(err, store.ErrNotExist) {
					continue
				}
				return err
			}
		}
	}
	return nil
}

// glob is a file-name pattern in fnmatch syntax, the syntax clients of both
// contracts use: * (any run of characters), ? (one character), [abc] and
// [a-z] (one of a set), [!abc] (one not in the set). It matches one name,
// case-sensitively; a backslash is an ordinary character. The zero glob
// matches every name. A glob is immutable and safe to share.
type glob struct {
	pattern string // in path.Match syntax; "" matches everything
}

// maxGlobBytes bounds a pattern.
const maxGlobBytes = 1024

// parseGlob translates an fnmatch pattern into a glob. "*" and "" match
// everything. A pattern with a slash, or one path.Match cannot parse (an
// unclosed "["), is an error wrapping errArgs.
func parseGlob(p string) (glob, error) {
	switch {
	case p == "" || p == "*":
		return glob{}, nil
	case len(p) > maxGlobBytes:
		return glob{}, fmt.Errorf("%w: pattern of %d bytes exceeds the limit of %d", errArgs, len(p), maxGlobBytes)
	case strings.Contains(p, "/"):
		return glob{}, fmt.Errorf("%w: a pattern matches one file name and must not contain '/', got %s", errArgs, quote(p))
	}
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; {
		case ch == '\\':
			b.WriteString(`\\`)
		case ch == '[' && !inClass:
			inClass = true
			b.WriteByte('[')
			if i+1 < len(p) && p[i+1] == '!' {
				b.WriteByte('^')
				i++
			}
		case ch == ']' && inClass:
			inClass = false
			b.WriteByte(']')
		default:
			b.WriteByte(ch)
		}
	}
	g := glob{pattern: b.String()}
	if _, err := path.Match(g.pattern, ""); err != nil {
		return glob{}, fmt.Errorf("%w: %s is not a valid pattern (use * ? [abc] [a-z] [!abc]): %v", errArgs, quote(p), err)
	}
	return g, nil
}

// match reports whether name matches g.
func (g glob) match(name string) bool {
	if g.pattern == "" {
		return true
	}
	ok, _ := path.Match(g.pattern, name)
	return ok
}
