// Package lift takes the long strings of a tool call's arguments out of
// the HTTP request body before mcp-go reads it, and puts them back when
// the tool body gets its arguments.
//
// mcp-go v1.2.1 unmarshals a POST body about seven times before a tool
// sees it (the transport's message sniffing, the protocol-era checks, the
// method, the _meta, the request, the call's params and its arguments as
// a map), and encoding/json scans every byte of a string it skips. For a
// chunk of 8 MiB of base64 that was 65% of the server's CPU.
// Lifted, mcp-go parses a body of a few hundred bytes; the strings cost
// one validating pass here and one copy when they are put back, and the
// argument decoder (package args) only finds their ends.
//
// [Lift] replaces each string value of 64 KiB or more inside the
// arguments of a tools/call request with a placeholder that names a
// random nonce drawn for that body, so no client can write a placeholder
// in advance; [Table.Restore] replaces the placeholders in the arguments
// with the original bytes, so a tool decodes exactly what the client sent.
// A body that is not valid JSON, not a tools/call request, or has no long
// string is left as it is.
//
// It must not change what any request means: the placeholders are put
// back before any tool reads its arguments (tool.Runtime does it for
// every tool), and nothing else in depotfs reads arguments.
package lift

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// MinLen is the length, in bytes of JSON (quotes included), from which a
// string is lifted. Shorter strings cost mcp-go little.
const MinLen = 64 << 10

// Table holds the strings lifted from one request body. It is read-only
// once Lift returns, so safe for concurrent use.
type Table struct {
	// prefix is `"depotfs-lifted-<nonce>-`, the start of every placeholder.
	prefix []byte
	// raw are the lifted strings as they were in the body, quotes
	// included; placeholder i stands for raw[i].
	raw [][]byte
}

// Len returns how many strings were lifted.
func (t *Table) Len() int { return len(t.raw) }

// Lift returns body with the long strings of a tools/call request's
// arguments replaced by placeholders, and the table that restores them;
// ok is false, and body is returned unchanged, when nothing was lifted.
// The returned strings alias body, which must not be changed afterwards.
func Lift(body []byte) (out []byte, t *Table, ok bool) {
	if len(body) < MinLen {
		return body, nil, false
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read never fails
	t = &Table{prefix: []byte(`"depotfs-lifted-` + hex.EncodeToString(nonce[:]) + "-")}
	s := scanner{b: body}
	var spans [][2]int
	method := false
	s.object(func(key []byte, start int) {
		switch string(key) {
		case `"method"`:
			end := s.skip()
			method = string(body[start:end]) == `"tools/call"` // the last one counts, as for encoding/json
		case `"params"`:
			s.object(func(key []byte, start int) {
				if string(key) != `"arguments"` {
					s.skip()
					return
				}
				s.strings(func(from, to int) {
					if to-from >= MinLen {
						spans = append(spans, [2]int{from, to})
					}
				})
			})
		default:
			s.skip()
		}
	})
	if s.bad || !method || len(spans) == 0 {
		return body, nil, false
	}
	size := len(body)
	for _, sp := range spans {
		size += len(t.prefix) + 21 - (sp[1] - sp[0])
	}
	out = make([]byte, 0, size)
	last := 0
	for i, sp := range spans {
		if !validString(body[sp[0]:sp[1]]) {
			return body, nil, false
		}
		out = append(append(out, body[last:sp[0]]...), t.prefix...)
		out = append(strconv.AppendInt(out, int64(i), 10), '"')
		t.raw = append(t.raw, body[sp[0]:sp[1]:sp[1]])
		last = sp[1]
	}
	out = append(out, body[last:]...)
	// The body is valid JSON exactly when what is left of it is and every
	// lifted string is: each long string is checked once, by validString,
	// not by encoding/json's far slower scanner.
	if !json.Valid(out) {
		return body, nil, false
	}
	return out, t, true
}

// validString reports whether s, delimited by the scanner (quotes included,
// no unescaped quote inside), is a valid JSON string: no control character,
// and valid escapes, which only a string with a backslash needs
// encoding/json to check.
func validString(s []byte) bool {
	body := s[1 : len(s)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		return json.Valid(s)
	}
	for _, c := range body {
		if c < 0x20 {
			return false
		}
	}
	return true
}

// Restore returns raw with every placeholder of t put back as the string
// it stands for. raw is returned as it is when it holds none (or t is
// nil); otherwise the result is a new slice.
func (t *Table) Restore(raw []byte) []byte {
	if t == nil || !bytes.Contains(raw, t.prefix) {
		return raw
	}
	var out []byte
	for {
		at := bytes.Index(raw, t.prefix)
		if at < 0 {
			return append(out, raw...)
		}
		rest := raw[at+len(t.prefix):]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		i, err := strconv.Atoi(string(rest[:n]))
		if err != nil || n == len(rest) || rest[n] != '"' || i >= len(t.raw) {
			// Not one of ours after all (the nonce is unguessable, so
			// this is only a string that merely contains the prefix).
			out = append(out, raw[:at+len(t.prefix)]...)
			raw = rest
			continue
		}
		if out == nil {
			size := len(raw)
			for _, r := range t.raw {
				size += len(r)
			}
			out = make([]byte, 0, size)
		}
		out = append(out, raw[:at]...)
		out = append(out, t.raw[i]...)
		raw = rest[n+1:]
	}
}

type ctxKey struct{}

// NewContext returns ctx carrying t, where FromContext finds it.
func NewContext(ctx context.Context, t *Table) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the table of the request ctx belongs to, or nil.
func FromContext(ctx context.Context) *Table {
	t, _ := ctx.Value(ctxKey{}).(*Table)
	return t
}

// scanner walks a JSON document to find the spans of its strings. It
// trusts the document only as far as it must to find them: out of bytes, or
// at a byte no JSON value starts with, it stops and sets bad; what it found
// in a document that is not valid JSON is checked by Lift before use.
type scanner struct {
	b   []byte
	i   int
	bad bool
}

// peek returns the byte at s.i, or 0 (and sets bad) at the end.
func (s *scanner) peek() byte {
	if s.i >= len(s.b) {
		s.bad = true
		return 0
	}
	return s.b[s.i]
}

// ws skips white space.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object walks the object at s.i (after white space); for each member it
// calls member with the raw key and the offset of the value, which member
// must consume. A value that is not an object is skipped.
func (s *scanner) object(member func(key []byte, start int)) {
	s.ws()
	if s.peek() != '{' {
		s.skip()
		return
	}
	s.i++
	for !s.bad {
		s.ws()
		switch s.peek() {
		case '}':
			s.i++
			return
		case ',':
			s.i++
			s.ws()
		}
		if s.peek() != '"' {
			s.bad = true
			return
		}
		from := s.i
		s.str()
		key := s.b[from:s.i]
		s.ws()
		if s.peek() != ':' {
			s.bad = true
			return
		}
		s.i++
		s.ws()
		start := s.i
		member(key, start)
		if s.i == start {
			s.bad = true // no value: stop rather than loop
		}
	}
}

// strings walks the value at s.i and calls found with the span of every
// string value in it (object keys excluded).
func (s *scanner) strings(found func(from, to int)) {
	s.ws()
	switch s.peek() {
	case '"':
		from := s.i
		s.str()
		if !s.bad {
			found(from, s.i)
		}
	case '{':
		s.object(func(_ []byte, _ int) { s.strings(found) })
	case '[':
		s.i++
		for !s.bad {
			s.ws()
			switch s.peek() {
			case ']':
				s.i++
				return
			case ',':
				s.i++
			default:
				start := s.i
				s.strings(found)
				if s.i == start {
					s.bad = true
				}
			}
		}
	default:
		s.skip()
	}
}

// skip consumes the value at s.i and returns the offset after it.
func (s *scanner) skip() int {
	s.ws()
	switch s.peek() {
	case '"':
		s.str()
	case '{', '[':
		depth := 0
		for !s.bad {
			switch s.peek() {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return s.i
			}
		}
	default:
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i
			}
			s.i++
		}
	}
	return s.i
}

// str consumes the string at s.i, quotes included.
func (s *scanner) str() {
	s.i++
	for s.i <= len(s.b) {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			break
		}
		k := s.i + j
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for k-1-n >= s.i && s.b[k-1-n] == '\\' {
			n++
		}
		s.i = k + 1
		if n%2 == 0 {
			return
		}
	}
	s.i, s.bad = len(s.b), true
}
