package args

import (
	"errors"
	"fmt"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
)

// Errors raised while checking arguments. Each problem found wraps one of
// these (or a depotpath sentinel), so the reply contracts can tell them
// apart.
var (
	// ErrInvalid marks an argument that is missing, mistyped or malformed.
	ErrInvalid = errors.New("invalid argument")
	// ErrLimit marks an argument over a configured limit.
	ErrLimit = errors.New("limit exceeded")
	// ErrOutside marks a listed entry whose name climbs out of the listed
	// directory; it is a security error like any other escape.
	ErrOutside = fmt.Errorf("%w: the name leaves the listed directory", depotpath.ErrEscapes)
)

// LimitError reports an argument over a limit, for example content larger
// than the configured maximum of one call.
func LimitError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrLimit, fmt.Sprintf(format, args...))
}

// problem is one thing wrong with the arguments: the argument's name (a
// JSON path such as "entries[2].name") and what is wrong with it.
type problem struct {
	field string
	err   error // wraps ErrInvalid, ErrLimit, ErrOutside or a depotpath sentinel
}

// Error collects every problem found in a call's arguments, so an agent
// can fix them all at once. It unwraps to each problem's error.
type Error struct {
	problems []problem
}

func (e *Error) Error() string {
	var b strings.Builder
	if errors.Is(e, ErrLimit) {
		b.WriteString("over a limit: ")
	} else {
		b.WriteString("invalid arguments: ")
	}
	for i, p := range e.problems {
		if i > 0 {
			b.WriteString("; ")
		}
		if p.field != "" {
			b.WriteString(p.field)
			b.WriteString(": ")
		}
		msg := p.err.Error()
		for _, prefix := range []error{ErrInvalid, ErrLimit} {
			msg = strings.TrimPrefix(msg, prefix.Error()+": ")
		}
		b.WriteString(msg)
	}
	return b.String()
}

// Unwrap returns the error of each problem.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.problems))
	for i, p := range e.problems {
		errs[i] = p.err
	}
	return errs
}

// Problem returns an error for one problem with one argument.
func Problem(field, format string, args ...any) error {
	var p Problems
	p.Addf(field, format, args...)
	return p.Err()
}

// IsError reports whether err is a problem with a call's arguments (found
// before anything was read or written).
func IsError(err error) bool {
	var ae *Error
	return errors.As(err, &ae)
}

// Problems accumulates argument problems, and the clean depot paths the
// decoders produced, while a call is decoded. The paths are what the tool
// pipeline checks against the caller's grants. The zero value is empty and
// ready; it is not safe for concurrent use.
type Problems struct {
	list     []problem
	paths    []Path
	warnings []string
	// mount is the host directory where the depot is mounted, when path
	// arguments under it are taken as the depot paths they show (see
	// SetMount); "" leaves such paths as they are.
	mount string
	// schema, when set, is the input schema every getter reads (see
	// Check).
	schema *Schema
}

// Check makes every getter of the objects decoded into p read s, the
// tool's input schema (see Schema): an argument's bounds, choices and
// default come from it, a getter of an argument it does not declare, or of
// another JSON type, panics, and every finished object refuses a missing
// argument s requires.
func (p *Problems) Check(s *Schema) { p.schema = s }

// SetMount makes DepotPath take a path under mount, the host directory
// where the depot is mounted ("/mnt/depot/a/b"), as the depot path it
// shows ("/a/b"), with a warning: an agent that was told a mount_path
// often sends it back, and storing "/mnt/depot/a/b" inside the depot is
// never what it meant.
func (p *Problems) SetMount(mount string) { p.mount = mount }

// Path is one clean depot path decoded from an argument.
type Path struct {
	Field string // "path", "entries[2].name"
	Path  string
}

// AddPath records a clean path decoded from field.
func (p *Problems) AddPath(field, path string) {
	p.paths = append(p.paths, Path{Field: field, Path: path})
}

// Paths returns the clean paths recorded so far, in order.
func (p *Problems) Paths() []Path { return p.paths }

// Warn records something about an accepted argument the agent should
// know, such as a path taken differently from what it probably meant.
func (p *Problems) Warn(format string, args ...any) {
	if len(p.warnings) < maxProblems {
		p.warnings = append(p.warnings, fmt.Sprintf(format, args...))
	}
}

// Warnings returns the warnings recorded so far, in order.
func (p *Problems) Warnings() []string { return p.warnings }

// maxProblems bounds how many problems one reply lists.
const maxProblems = 20

// Addf records a problem with a field; the message wraps ErrInvalid.
func (p *Problems) Addf(field, format string, args ...any) {
	p.Add(field, fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...)))
}

// Add records a problem with a field caused by err.
func (p *Problems) Add(field string, err error) {
	if len(p.list) < maxProblems {
		p.list = append(p.list, problem{field: field, err: err})
	}
}

// OK reports whether no problem was found.
func (p *Problems) OK() bool { return len(p.list) == 0 }

// Err returns the problems as one error, or nil.
func (p *Problems) Err() error {
	if p.OK() {
		return nil
	}
	return &Error{problems: p.list}
}

// Full reports whether the list holds as many problems as one reply
// lists; further problems are dropped.
func (p *Problems) Full() bool { return len(p.list) >= maxProblems }

// Len returns the number of problems recorded.
func (p *Problems) Len() int { return len(p.list) }
