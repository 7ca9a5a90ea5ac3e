// Package args is the strict decoder of tool arguments: it reads a call's
// raw JSON exactly as sent (duplicate keys, invalid UTF-8, unpaired
// surrogates, null and mistyped values are problems, never silently
// fixed), collects every problem with its argument's name so an agent can
// fix them all at once, and records every depot path it decodes so the
// tool pipeline checks each one against the caller's grants. The tool's
// input schema (Schema) is the one source of its arguments' bounds,
// choices, defaults and which are required, which every getter reads;
// Fill decodes a struct of a tool's arguments by that schema alone. It
// knows nothing of MCP, the store or the reply contracts.
package args

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Object is one JSON object of arguments being decoded. Every getter records
// the field as known, so finish can report the ones nobody asked for; every
// problem goes to the shared problems list under the field's full name.
type Object struct {
	prefix string // "" at the top level, "entries[2]." below
	fields map[string]json.RawMessage
	known  map[string]bool
	probs  *Problems
}

// Decode parses raw as a JSON object of arguments. It returns nil (and
// records a problem under field) when raw is not an object; a missing or
// empty raw is an empty object, so required arguments are reported by name.
func Decode(raw json.RawMessage, field, prefix string, probs *Problems) *Object {
	o := &Object{prefix: prefix, fields: map[string]json.RawMessage{}, known: map[string]bool{}, probs: probs}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return o
	}
	if got := JSONType(raw); got != "object" {
		probs.Addf(field, "expected an object, got %s", got)
		return nil
	}
	if keys, values, ok := splitObject(raw); ok {
		for i, key := range keys {
			o.fields[key] = values[i]
		}
		return o
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		probs.Addf(field, "not valid JSON: %v", err)
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			probs.Addf(field, "not valid JSON: %v", err)
			return nil
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			probs.Addf(field, "not valid JSON: %v", err)
			return nil
		}
		if _, dup := o.fields[key]; dup {
			probs.Addf(o.Name(key), "given more than once")
			continue
		}
		o.fields[key] = value
	}
	return o
}

// Problems returns the list the object records its problems and decoded
// paths into, shared with the objects nested in it.
func (o *Object) Problems() *Problems { return o.probs }

// Name returns the full name of a field for messages.
func (o *Object) Name(field string) string { return o.prefix + field }

// Has reports whether the field was sent, and marks it known.
func (o *Object) Has(field string) bool {
	o.declared(field, "")
	o.known[field] = true
	_, ok := o.fields[field]
	return ok
}

// Value returns the raw value of a field if it was sent with the wanted
// JSON type. A missing required field, a null or a value of another type is
// recorded as a problem.
func (o *Object) Value(field, want string, required bool) (json.RawMessage, bool) {
	o.declared(field, want)
	o.known[field] = true
	raw, ok := o.fields[field]
	if !ok {
		if required {
			o.probs.Addf(o.Name(field), "required %s argument is missing", want)
		}
		return nil, false
	}
	got := JSONType(raw)
	if got != want && !(want == "integer" && got == "number") {
		if got == "null" {
			o.probs.Addf(o.Name(field), "expected %s, got null (omit an optional argument instead of sending null)", want)
		} else {
			o.probs.Addf(o.Name(field), "expected %s, got %s", want, got)
		}
		return nil, false
	}
	return raw, true
}

// Str returns a string field.
func (o *Object) Str(field string, required bool) (string, bool) {
	raw, ok := o.Value(field, "string", required)
	if !ok {
		return "", false
	}
	s, err := DecodeString(raw)
	if err != nil {
		o.probs.Add(o.Name(field), err)
		return "", false
	}
	return s, true
}

// Int returns an integer field within the minimum and maximum its input
// schema declares (see Problems.Check; the integers every JSON
// implementation carries where it declares none). Besides a JSON integer
// it accepts a string of decimal digits ("3600"), whatever the argument:
// agents and clients of the provider contract send numbers that way, and
// the meaning is never in doubt (see DESIGN.md, "Arguments").
func (o *Object) Int(field string, required bool) (int64, bool) {
	lo, hi := o.bounds(field)
	return o.readInt(field, required, lo, hi)
}

// IntLimit is Int for an argument whose schema maximum is a configured
// limit: a value above it is refused with over's error, which names the
// limit and the fix (see LimitError), rather than as out of range.
func (o *Object) IntLimit(field string, required bool, over func(n int64) error) (int64, bool) {
	lo, hi := o.bounds(field)
	n, ok := o.readInt(field, required, lo, MaxExactInteger)
	if ok && n > hi {
		o.probs.Add(o.Name(field), over(n))
		return 0, false
	}
	return n, ok
}

// readInt reads an integer field within [lo, hi], in the forms Int
// describes.
func (o *Object) readInt(field string, required bool, lo, hi int64) (int64, bool) {
	o.known[field] = true
	raw, ok := o.fields[field]
	if ok && JSONType(raw) == "string" {
		return o.intString(field, raw, lo, hi)
	}
	raw, ok = o.Value(field, "integer", required)
	if !ok {
		return 0, false
	}
	n, ok := parseInteger(raw)
	if !ok {
		o.probs.Addf(o.Name(field), "expected an integer, got %s", Quote(string(raw)))
		return 0, false
	}
	return o.bounded(field, n, lo, hi)
}

// intString reads an integer sent as a JSON string of decimal digits.
func (o *Object) intString(field string, raw json.RawMessage, lo, hi int64) (int64, bool) {
	s, err := DecodeString(raw)
	if err != nil {
		o.probs.Add(o.Name(field), err)
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < -MaxExactInteger || n > MaxExactInteger {
		o.probs.Addf(o.Name(field), "expected an integer (a JSON number, or a string of decimal digits), got %s", Quote(s))
		return 0, false
	}
	return o.bounded(field, n, lo, hi)
}

// bounded checks n against [lo, hi] for field.
func (o *Object) bounded(field string, n, lo, hi int64) (int64, bool) {
	switch {
	case n < lo:
		o.probs.Addf(o.Name(field), "%d is below the minimum %d", n, lo)
		return 0, false
	case n > hi:
		o.probs.Addf(o.Name(field), "%d is above the maximum %d", n, hi)
		return 0, false
	}
	return n, true
}

// Array returns the raw elements of an array field.
func (o *Object) Array(field string, required bool) ([]json.RawMessage, bool) {
	raw, ok := o.Value(field, "array", required)
	if !ok {
		return nil, false
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		o.probs.Addf(o.Name(field), "not a valid JSON array: %v", err)
		return nil, false
	}
	return elems, true
}

// Raw returns the raw value of a field that accepts several JSON types,
// such as mtime; the caller checks the type.
func (o *Object) Raw(field string) (json.RawMessage, bool) {
	o.declared(field, "")
	o.known[field] = true
	raw, ok := o.fields[field]
	return raw, ok
}

// bounds returns the minimum and maximum the input schema declares for
// field, the integers every JSON implementation carries where it declares
// none (or there is no schema).
func (o *Object) bounds(field string) (lo, hi int64) {
	lo, hi = -MaxExactInteger, MaxExactInteger
	if p := o.declared(field, "integer"); p != nil {
		if p.Minimum != nil {
			lo = int64(*p.Minimum)
		}
		if p.Maximum != nil {
			hi = int64(*p.Maximum)
		}
	}
	return lo, hi
}

// enum returns the strings the input schema allows for field. A getter
// that needs them on an argument without an enum is a build defect, so
// enum panics; the tests call every tool.
func (o *Object) enum(field string) []string {
	var choices []string
	if p := o.declared(field, "string"); p != nil {
		for _, e := range p.Enum {
			if c, ok := e.(string); ok {
				choices = append(choices, c)
			}
		}
	}
	if len(choices) == 0 {
		panic(fmt.Sprintf("args: %s has no enum of strings in the input schema", o.Name(field)))
	}
	return choices
}

// maxUnknownListed bounds the unknown argument names a reply lists.
const maxUnknownListed = 8

// Finish reports every field no getter asked for, so a misspelt optional
// argument is never silently ignored, and every argument the input schema
// requires that the call left out and no getter refused.
func (o *Object) Finish() {
	if o.probs.schema != nil {
		o.probs.schema.refuseMissing(o.prefix, o.fields, o.probs)
	}
	var unknown []string
	for field := range o.fields {
		if !o.known[field] {
			unknown = append(unknown, field)
		}
	}
	if len(unknown) == 0 {
		return
	}
	// Names are the client's: each is clipped and only the first few
	// listed, so the reply stays small whatever was sent.
	slices.Sort(unknown)
	if n := len(unknown); n > maxUnknownListed {
		unknown = append(unknown[:maxUnknownListed], fmt.Sprintf("and %d more", n-maxUnknownListed))
	}
	for i, f := range unknown[:min(len(unknown), maxUnknownListed)] {
		unknown[i] = Quote(f)
	}
	knownNames := slices.Sorted(maps.Keys(o.known))
	where := "arguments"
	if o.prefix != "" {
		where = strings.TrimSuffix(o.prefix, ".")
	}
	if len(knownNames) == 0 {
		o.probs.Addf(where, "unknown argument(s) %s; this tool takes no arguments (send {})", strings.Join(unknown, ", "))
		return
	}
	o.probs.Addf(where, "unknown argument(s) %s; accepted: %s", strings.Join(unknown, ", "), strings.Join(knownNames, ", "))
}

// JSONType names the JSON type of a raw value by its first byte; the value
// has already been checked to be valid JSON by the decoder.
func JSONType(raw json.RawMessage) string {
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

// DecodeString decodes a raw JSON string strictly. Go's decoder silently
// turns invalid UTF-8 and unpaired UTF-16 surrogate escapes ("\udc80") into
// U+FFFD; a path or name that arrives that way is refused instead, because
// the replacement would store a different name than the agent meant.
func DecodeString(raw json.RawMessage) (string, error) {
	if s, ok := plainString(raw); ok {
		return s, nil
	}
	if !utf8.Valid(raw) {
		return "", fmt.Errorf("%w: not valid UTF-8 (JSON text must be UTF-8)", ErrInvalid)
	}
	if err := checkSurrogates(raw); err != nil {
		return "", err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: not a valid JSON string: %v", ErrInvalid, err)
	}
	return s, nil
}

// plainString returns the text of a raw JSON string that has no escapes
// (base64 content, most names), with one pass over it instead of the three
// of the general path (UTF-8, surrogates, encoding/json); ok is false for
// any other string, which the general path then decodes or refuses.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			return "", false
		}
	}
	return string(body), true
}

// checkSurrogates reports a \u escape in a raw JSON string that is half of a
// UTF-16 surrogate pair without its other half: such a string has no UTF-8
// form.
func checkSurrogates(raw []byte) error {
	bad := fmt.Errorf("%w: not valid Unicode: contains an unpaired UTF-16 surrogate escape", ErrInvalid)
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
			return fmt.Errorf("%w: not a valid JSON string escape", ErrInvalid)
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

// MaxExactInteger is the largest integer every JSON implementation carries
// exactly (2^53).
const MaxExactInteger = 1 << 53

// parseInteger parses a JSON number that has an integral value, such as
// 3, 3.0 or 3e2, within ±2^53.
func parseInteger(raw json.RawMessage) (int64, bool) {
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, n >= -MaxExactInteger && n <= MaxExactInteger
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > MaxExactInteger {
		return 0, false
	}
	return int64(f), true
}

// Parse decodes raw as a call's arguments object into probs, lets fields
// read it and reports every argument fields did not ask for (Finish). It
// returns the problems recorded (Problems.Err); fields is not called when
// raw is not an object.
func Parse(raw json.RawMessage, probs *Problems, fields func(o *Object)) error {
	if o := Decode(raw, "arguments", "", probs); o != nil {
		fields(o)
		o.Finish()
	}
	return probs.Err()
}
