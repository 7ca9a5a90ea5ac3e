package depotpath

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Limits on the size of a clean path, in bytes of its UTF-8 encoding.
const (
	// MaxComponentBytes is the longest single path component (NAME_MAX).
	MaxComponentBytes = 255
	// MaxPathBytes is the longest whole path (PATH_MAX).
	MaxPathBytes = 4096
)

// Root is the clean path of the depot's root directory.
const Root = "/"

// ErrInvalid reports a path that can never name a depot entry: empty, NUL or
// control characters, invalid UTF-8, or a component or path over the limits.
var ErrInvalid = errors.New("invalid depot path")

// ErrEscapes reports a path whose ".." components climb above the root.
var ErrEscapes = errors.New("depot path escapes the root")

// Error describes why a path was refused. It wraps ErrInvalid or ErrEscapes.
// Path is the agent's input, quoted so control characters stay visible.
type Error struct {
	Path   string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v %q: %s", e.Err, e.Path, e.Reason)
}

// Unwrap returns ErrInvalid or ErrEscapes.
func (e *Error) Unwrap() error { return e.Err }

func invalid(p, reason string) error { return &Error{Path: p, Reason: reason, Err: ErrInvalid} }

// Clean normalizes a path as an agent may send it into a clean depot path.
//
// Backslashes become slashes, repeated slashes collapse, "." components are
// dropped, ".." removes the previous component (and fails with ErrEscapes
// above the root), a relative path is taken relative to the root, and the
// result is in Unicode NFC. Clean is idempotent: Clean(Clean(p)) == Clean(p).
//
// Nothing else is decoded: "%2e%2e" is a literal name. A component that
// only looks like ".." (fullwidth or leader dots, which read as ".." in
// Unicode compatibility form) fails with ErrEscapes, one that looks like
// "." with ErrInvalid, and bidirectional control characters (U+202E and
// friends, which disguise names) with ErrInvalid.
func Clean(p string) (string, error) {
	if p == "" {
		return "", invalid(p, "empty path")
	}
	if !utf8.ValidString(p) {
		return "", invalid(p, "not valid UTF-8")
	}
	for _, r := range p {
		if r == 0 {
			return "", invalid(p, "contains a NUL character")
		}
		if unicode.IsControl(r) {
			return "", invalid(p, fmt.Sprintf("contains control character %U", r))
		}
		if r == utf8.RuneError {
			// JSON decoders turn invalid UTF-8 into U+FFFD, so over MCP this
			// is how an invalid path arrives; a real name never needs it.
			return "", invalid(p, "contains U+FFFD: the path was not valid UTF-8")
		}
		if isBidiControl(r) {
			return "", invalid(p, fmt.Sprintf("contains the bidirectional control character %U, which can make a name display as another", r))
		}
	}
	if len(p) > 4*MaxPathBytes {
		return "", invalid(p, fmt.Sprintf("longer than %d bytes", MaxPathBytes))
	}
	p = norm.NFC.String(strings.ReplaceAll(p, `\`, "/"))

	parts := make([]string, 0, strings.Count(p, "/")+1)
	for part := range strings.SplitSeq(p, "/") {
		switch part {
		case "", ".":
		case "..":
			if len(parts) == 0 {
				return "", &Error{Path: p, Reason: `".." climbs above the root`, Err: ErrEscapes}
			}
			parts = parts[:len(parts)-1]
		default:
			if len(part) > MaxComponentBytes {
				return "", invalid(p, fmt.Sprintf("component of %d bytes exceeds the limit of %d", len(part), MaxComponentBytes))
			}
			switch lookalike(part) {
			case "..":
				return "", &Error{Path: p, Reason: fmt.Sprintf("component %q reads as \"..\" (its Unicode compatibility form)", part), Err: ErrEscapes}
			case ".":
				return "", invalid(p, fmt.Sprintf("component %q reads as \".\" (its Unicode compatibility form)", part))
			}
			parts = append(parts, part)
		}
	}
	clean := "/" + strings.Join(parts, "/")
	if len(clean) > MaxPathBytes {
		return "", invalid(p, fmt.Sprintf("path of %d bytes exceeds the limit of %d", len(clean), MaxPathBytes))
	}
	return clean, nil
}

// lookalike returns "." or ".." when the component reads as one in its
// Unicode compatibility form (NFKC) without being it: fullwidth full stops
// "．．", the leaders "‥" and "․․", small full stops. Such a name is no
// escape in the depot, but a program or a person that folds compatibility
// characters would take it for one. Other components return "".
func lookalike(part string) string {
	if norm.NFKC.IsNormalString(part) {
		return ""
	}
	switch k := norm.NFKC.String(part); k {
	case ".", "..":
		return k
	}
	return ""
}

// isBidiControl reports the Unicode bidirectional formatting characters
// (marks, embeddings, overrides, isolates), which can make a name display
// as a different one ("invoice\u202Efdp.exe" shows as "invoiceexe.pdf").
func isBidiControl(r rune) bool {
	return r == 0x061C || r == 0x200E || r == 0x200F || r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
}

// CleanName validates a single path component (a file name without
// directories), as used for filename-only uploads and listing entries. It
// returns the name in NFC or an error wrapping ErrInvalid.
func CleanName(name string) (string, error) {
	if strings.ContainsAny(name, `/\`) {
		return "", invalid(name, "a name must not contain a slash")
	}
	if name == "." || name == ".." {
		return "", invalid(name, "a name must not be . or ..")
	}
	p, err := Clean("/" + name)
	if err != nil {
		if pe, ok := errors.AsType[*Error](err); ok {
			pe.Path = name
		}
		return "", err
	}
	if p == Root {
		return "", invalid(name, "empty name")
	}
	return p[1:], nil
}

// Split returns the parent directory and the last component of a clean path.
// Split("/a/b") is ("/a", "b"); Split("/a") is ("/", "a"); Split("/") is
// ("/", "").
func Split(p string) (dir, name string) {
	if p == Root {
		return Root, ""
	}
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return Root, p[1:]
	}
	return p[:i], p[i+1:]
}

// Join appends a single clean component to a clean directory path.
func Join(dir, name string) string {
	if dir == Root {
		return "/" + name
	}
	return dir + "/" + name
}

// Base returns the last component of a clean path ("" for the root).
func Base(p string) string {
	_, name := Split(p)
	return name
}

// Within reports whether the clean path p is prefix itself or lies below it,
// matching whole components: "/projects/a" is within "/projects/a" and
// "/projects" but not within "/projects/ab".
func Within(p, prefix string) bool {
	if prefix == Root || p == prefix {
		return true
	}
	return strings.HasPrefix(p, prefix) && len(p) > len(prefix) && p[len(prefix)] == '/'
}

// Parents returns the ancestors of a clean path from the root down, not
// including p itself: Parents("/a/b/c") is ["/", "/a", "/a/b"].
func Parents(p string) []string {
	if p == Root {
		return nil
	}
	out := []string{Root}
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}
