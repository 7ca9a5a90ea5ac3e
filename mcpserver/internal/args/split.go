package args

import (
	"bytes"
	"encoding/json"
)

// splitObject splits raw, a JSON object, into its members without decoding
// their values: each key decoded, each value as raw JSON. A string value is
// only delimited (its closing quote found with one memchr-speed search), not
// validated: every getter that reads a string validates it (DecodeString,
// Content), and a member no getter reads is refused as unknown. Other
// values are checked with json.Valid, which is cheap for the numbers,
// booleans and small objects they are. ok is false when raw is not a
// well-formed object as far as this scan tells, and for a duplicate key;
// the caller then decodes with encoding/json, which says what is wrong.
//
// Arguments reach Decode already parsed once (by mcp-go, and long strings
// by package lift), so encoding/json's second scan of every byte of a
// chunk's content was pure cost: this one touches each byte of a long
// string once, in bytes.IndexByte.
func splitObject(raw []byte) (keys []string, values []json.RawMessage, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, nil, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil, nil, skipSpace(raw, i+1) == len(raw)
	}
	seen := map[string]bool{}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return nil, nil, false
		}
		end, ok := stringEnd(raw, i)
		if !ok {
			return nil, nil, false
		}
		key, err := DecodeString(raw[i:end])
		if err != nil || seen[key] {
			return nil, nil, false
		}
		seen[key] = true
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, nil, false
		}
		i = skipSpace(raw, i+1)
		vend, ok := valueEnd(raw, i)
		if !ok {
			return nil, nil, false
		}
		keys, values = append(keys, key), append(values, raw[i:vend:vend])
		i = skipSpace(raw, vend)
		if i >= len(raw) {
			return nil, nil, false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return keys, values, skipSpace(raw, i+1) == len(raw)
		default:
			return nil, nil, false
		}
	}
}

// skipSpace returns the offset of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset just after the string that starts with the
// quote at b[i].
func stringEnd(b []byte, i int) (int, bool) {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, false
		}
		k += j
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for k-1-n > i && b[k-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return k + 1, true
		}
		j = k + 1
	}
}

// valueEnd returns the offset just after the value that starts at b[i]; a
// value other than a string must be valid JSON.
func valueEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	if b[i] == '"' {
		return stringEnd(b, i)
	}
	end := i
	if b[i] == '{' || b[i] == '[' {
		depth := 0
		for end < len(b) {
			switch b[end] {
			case '"':
				e, ok := stringEnd(b, end)
				if !ok {
					return 0, false
				}
				end = e
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			end++
			if depth == 0 {
				break
			}
		}
	} else {
		for end < len(b) && b[end] != ',' && b[end] != '}' && b[end] != ']' && b[end] != ' ' && b[end] != '\t' && b[end] != '\n' && b[end] != '\r' {
			end++
		}
	}
	return end, end > i && json.Valid(b[i:end])
}
