package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// object is one JSON object of arguments being decoded. Every getter records
// the field as known, so finish can report the ones nobody asked for; every
// problem goes to the shared problems list under the field's full name.
type object struct {
	prefix string // "" at the top level, "entries[2]." below
	fields map[string]json.RawMessage
	known  map[string]bool
	probs  *problems
}

// decodeObject parses raw as a JSON object of arguments. It returns nil (and
// records a problem under field) when raw is not an object; a missing or
// empty raw is an empty object, so required arguments are reported by name.
func decodeObject(raw json.RawMessage, field, prefix string, probs *problems) *object {
	o := &object{prefix: prefix, fields: map[string]json.RawMessage{}, known: map[string]bool{}, probs: probs}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return o
	}
	if got := jsonType(raw); got != "object" {
		probs.addf(field, "expected an object, got %s", got)
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		probs.addf(field, "not valid JSON: %v", err)
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			probs.addf(field, "not valid JSON: %v", err)
			return nil
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			probs.addf(field, "not valid JSON: %v", err)
			return nil
		}
		if _, dup := o.fields[key]; dup {
			probs.addf(o.name(key), "given more than once")
			continue
		}
		o.fields[key] = value
	}
	return o
}

// name returns the full name of a field for messages.
func (o *object) name(field string) string { return o.prefix + field }

// has reports whether the field was sent, and marks it known.
func (o *object) has(field string) bool {
	o.known[field] = true
	_, ok := o.fields[field]
	return ok
}

// value returns the raw value of a field if it was sent with the wanted
// JSON type. A missing required field, a null or a value of another type is
// recorded as a problem.
func (o *object) value(field, want string, required bool) (json.RawMessage, bool) {
	o.known[field] = true
	raw, ok := o.fields[field]
	if !ok {
		if required {
			o.probs.addf(o.name(field), "required %s argument is missing", want)
		}
		return nil, false
	}
	got := jsonType(raw)
	if got != want && !(want == "integer" && got == "number") {
		if got == "null" {
			o.probs.addf(o.name(field), "expected %s, got null (omit an optional argument instead of sending null)", want)
		} else {
			o.probs.addf(o.name(field), "expected %s, got %s", want, got)
		}
		return nil, false
	}
	return raw, true
}

// str returns a string field.
func (o *object) str(field string, required bool) (string, bool) {
	raw, ok := o.value(field, "string", required)
	if !ok {
		return "", false
	}
	s, err := decodeString(raw)
	if err != nil {
		o.probs.add(o.name(field), err)
		return "", false
	}
	return s, true
}

// integer returns an integer field within [lo, hi].
func (o *object) integer(field string, required bool, lo, hi int64) (int64, bool) {
	raw, ok := o.value(field, "integer", required)
	if !ok {
		return 0, false
	}
	n, ok := parseInteger(raw)
	if !ok {
		o.probs.addf(o.name(field), "expected an integer, got %s", quote(string(raw)))
		return 0, false
	}
	if n < lo {
		o.probs.addf(o.name(field), "%d is below the minimum %d", n, lo)
		return 0, false
	}
	if n > hi {
		o.probs.addf(o.name(field), "%d is above the maximum %d", n, hi)
		return 0, false
	}
	return n, true
}

// array returns the raw elements of an array field.
func (o *object) array(field string, required bool) ([]json.RawMessage, bool) {
	raw, ok := o.value(field, "array", required)
	if !ok {
		return nil, false
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		o.probs.addf(o.name(field), "not a valid JSON array: %v", err)
		return nil, false
	}
	return elems, true
}

// raw returns the raw value of a field that accepts several JSON types,
// such as mtime; the caller checks the type.
func (o *object) raw(field string) (json.RawMessage, bool) {
	o.known[field] = true
	raw, ok := o.fields[field]
	return raw, ok
}

// finish reports every field no getter asked for, so a misspelt optional
// argument is never silently ignored.
func (o *object) finish() {
	var unknown []string
	for field := range o.fields {
		if !o.known[field] {
			unknown = append(unknown, strconv.Quote(field))
		}
	}
	if len(unknown) == 0 {
		return
	}
	slices.Sort(unknown)
	knownNames := make([]string, 0, len(o.known))
	for field := range o.known {
		knownNames = append(knownNames, field)
	}
	slices.Sort(knownNames)
	where := "arguments"
	if o.prefix != "" {
		where = strings.TrimSuffix(o.prefix, ".")
	}
	if len(knownNames) == 0 {
		o.probs.addf(where, "unknown argument(s) %s; this tool takes no arguments (send {})", strings.Join(unknown, ", "))
		return
	}
	o.probs.addf(where, "unknown argument(s) %s; accepted: %s", strings.Join(unknown, ", "), strings.Join(knownNames, ", "))
}

// jsonType names the JSON type of a raw value by its first byte; the value
// has already been checked to be valid JSON by the decoder.
func jsonType(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// decodeString decodes a raw JSON string strictly. Go's decoder silently
// turns invalid UTF-8 and unpaired UTF-16 surrogate escapes ("\udc80") into
// U+FFFD; a path or name that arrives that way is refused instead, because
// the replacement would store a different name than the agent meant.
func decodeString(raw json.RawMessage) (string, error) {
	if !utf8.Valid(raw) {
		return "", fmt.Errorf("%w: not valid UTF-8 (JSON text must be UTF-8)", errArgs)
	}
	if err := checkSurrogates(raw); err != nil {
		return "", err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: not a valid JSON string: %v", errArgs, err)
	}
	return s, nil
}

// checkSurrogates reports a \u escape in a raw JSON string that is half of a
// UTF-16 surrogate pair without its other half: such a string has no UTF-8
// form.
func checkSurrogates(raw []byte) error {
	bad := fmt.Errorf("%w: not valid Unicode: contains an unpaired UTF-16 surrogate escape", errArgs)
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+1 < len(raw) && raw[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r, ok := hex4(raw, i+2)
		if !ok {
			return fmt.Errorf("%w: not a valid JSON string escape", errArgs)
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return bad
		case r >= 0xD800 && r <= 0xDBFF:
			next, ok := hex4(raw, i+8)
			if i+7 >= len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' || !ok || next < 0xDC00 || next > 0xDFFF {
				return bad
			}
			i += 11
		default:
			i += 5
		}
	}
	return nil
}

// hex4 parses the four hex digits at raw[i:i+4].
func hex4(raw []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[i:i+4]), 16, 16)
	return rune(n), err == nil
}

// maxExactInteger is the largest integer every JSON implementation carries
// exactly (2^53).
const maxExactInteger = 1 << 53

// parseInteger parses a JSON number that has an integral value, such as
// 3, 3.0 or 3e2, within ±2^53.
func parseInteger(raw json.RawMessage) (int64, bool) {
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, n >= -maxExactInteger && n <= maxExactInteger
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxExactInteger {
		return 0, false
	}
	return int64(f), true
}
