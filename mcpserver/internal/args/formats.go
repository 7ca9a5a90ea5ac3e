package args

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/depotfs/depotfs/internal/depotpath"
)

// The encodings an agent may send content in.
const (
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// Bounds of an mtime: the Unix epoch to the end of year 9999.
var (
	minMTime = time.Unix(0, 0).UTC()
	maxMTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// maxPatternBytes bounds a listing's glob pattern.
const maxPatternBytes = 255

// maxUploadID bounds an upload id's length.
const maxUploadID = 128

// DepotPath reads a path argument and cleans it with depotpath.Clean. The
// clean path is recorded with the problems, so the call checks it against
// the caller's grants (the tool pipeline) whatever the tool does with it.
func (o *Object) DepotPath(field string, required bool) (string, bool) {
	s, ok := o.Str(field, required)
	if !ok {
		return "", false
	}
	if len(s) > 4*depotpath.MaxPathBytes {
		o.probs.Add(o.Name(field), fmt.Errorf("%w: path of %d bytes exceeds the limit of %d", depotpath.ErrInvalid, len(s), depotpath.MaxPathBytes))
		return "", false
	}
	p, err := depotpath.Clean(s)
	if err != nil {
		o.probs.Add(o.Name(field), err)
		return "", false
	}
	if in, ok := UnderMount(p, o.probs.mount); ok && strings.HasPrefix(s, "/") {
		o.probs.Warn("%s: %s is under the mount point %s; it was taken as the depot path %s (send depot paths, such as %s)", o.Name(field), Quote(s), Quote(o.probs.mount), Quote(in), Quote(in))
		p = in
	}
	o.probs.AddPath(o.Name(field), p)
	if why := hostPathLook(s); why != "" {
		o.probs.Warn("%s: %s was taken as the depot path %s: %s", o.Name(field), Quote(s), Quote(p), why)
	}
	return p, true
}

// UnderMount returns the depot path that p, a clean path, shows when it
// lies under mount, the host directory where the depot is mounted
// ("/mnt/depot/a" shows "/a"), and whether it does. A mount of "" or "/"
// contains nothing: every path would be under it.
func UnderMount(p, mount string) (string, bool) {
	if mount == "" {
		return "", false
	}
	m, err := depotpath.Clean(mount)
	if err != nil || m == depotpath.Root || !depotpath.Within(p, m) {
		return "", false
	}
	return "/" + strings.TrimLeft(strings.TrimPrefix(p, m), "/"), true
}

// hostPathLook says why s, a path argument, looks like a path on the
// agent's own machine rather than in the depot, or "" when it does not: a
// Windows drive letter or a home directory mean nothing in the depot, where
// they become ordinary names.
func hostPathLook(s string) string {
	switch {
	case len(s) >= 2 && s[1] == ':' && (s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 'a' && s[0] <= 'z') && (len(s) == 2 || s[2] == '\\' || s[2] == '/'):
		return fmt.Sprintf("the drive letter %s is an ordinary directory name in the depot; send a path from the depot root, such as \"/%s\"", Quote(s[:2]), strings.TrimLeft(strings.ReplaceAll(s[2:], `\`, "/"), "/"))
	case s == "~" || strings.HasPrefix(s, "~/") || strings.HasPrefix(s, `~\`):
		return "\"~\" is an ordinary directory name in the depot, not a home directory; send a path from the depot root, such as \"/" + strings.TrimLeft(strings.ReplaceAll(s[1:], `\`, "/"), "/") + "\""
	}
	return ""
}

// SHA256 reads a SHA-256 argument: 64 hex digits, returned in lower case.
func (o *Object) SHA256(field string, required bool) (string, bool) {
	s, ok := o.Str(field, required)
	if !ok {
		return "", false
	}
	s = strings.ToLower(s)
	if digits, ok := strings.CutPrefix(s, "sha256:"); ok {
		o.probs.Addf(o.Name(field), "send the 64 hexadecimal digits without the \"sha256:\" prefix, such as %s", Quote(digits))
		return "", false
	}
	if len(s) != 64 {
		o.probs.Addf(o.Name(field), "expected 64 hexadecimal digits, got %d characters", len(s))
		return "", false
	}
	if _, err := hex.DecodeString(s); err != nil {
		o.probs.Addf(o.Name(field), "expected 64 hexadecimal digits, got a non-hex character")
		return "", false
	}
	return s, true
}

// Encoding reads an encoding argument, EncodingUTF8 when absent. Both
// spellings of UTF-8 ("utf-8", the guide tools' and Python's, and "utf8",
// the fs tools' and Node's) and "base64" are accepted in any case, as are
// the extra choices a tool adds ("binary"); the result is EncodingUTF8,
// EncodingBase64 or the extra choice as listed. The input schema's enum
// must list the same choices (in any case), or Encoding panics.
func (o *Object) Encoding(field string, extra ...string) (string, bool) {
	choices := append([]string{EncodingUTF8, "utf8", EncodingBase64}, extra...)
	if o.probs.schema != nil && !sameFolded(o.enum(field), choices) {
		panic(fmt.Sprintf("args: %s: the decoder accepts %q, the input schema's enum is %q", o.Name(field), choices, o.enum(field)))
	}
	if !o.Has(field) {
		return EncodingUTF8, true
	}
	s, ok := o.Str(field, false)
	if !ok {
		return "", false
	}
	switch {
	case strings.EqualFold(s, "utf-8") || strings.EqualFold(s, "utf8"):
		return EncodingUTF8, true
	case strings.EqualFold(s, EncodingBase64):
		return EncodingBase64, true
	}
	for _, c := range extra {
		if strings.EqualFold(s, c) {
			return c, true
		}
	}
	o.probs.Addf(o.Name(field), "must be one of %s (case does not matter), got %s", strings.Join(quoteAll(choices), ", "), Quote(s))
	return "", false
}

// sameFolded reports whether a and b hold the same strings, ignoring case
// and order.
func sameFolded(a, b []string) bool {
	norm := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = strings.ToLower(s)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(norm(a), norm(b))
}

// Content reads a content argument sent in the encoding the "encoding"
// argument names (see Encoding), and returns its bytes and that encoding;
// nil bytes when either argument is refused (a missing or mistyped content
// is reported whatever the encoding). The raw size is checked against max
// before anything is decoded.
func (o *Object) Content(field string, max int64) ([]byte, string) {
	encoding, encodingOK := o.Encoding("encoding")
	raw, ok := o.Value(field, "string", true)
	if !ok || !encodingOK {
		return nil, encoding
	}
	// JSON escapes make raw text at most six times longer than what it
	// decodes to, and base64 only a third longer: anything beyond that bound
	// is over the limit before a byte is decoded.
	if int64(len(raw)) > 6*max+2 {
		o.probs.Add(o.Name(field), LimitError("content of about %d bytes exceeds the limit of %d bytes per call", len(raw), max))
		return nil, encoding
	}
	data, plain := []byte(nil), false
	if encoding == EncodingBase64 {
		data, plain = plainBase64(raw)
	}
	if !plain {
		s, err := DecodeString(raw)
		if err == nil && encoding == EncodingBase64 {
			data, err = decodeBase64(s)
		} else {
			data = []byte(s)
		}
		if err != nil {
			o.probs.Add(o.Name(field), err)
			return nil, encoding
		}
	}
	if int64(len(data)) > max {
		o.probs.Add(o.Name(field), LimitError("content of %d bytes exceeds the limit of %d bytes per call", len(data), max))
		return nil, encoding
	}
	return data, encoding
}

// plainBase64 decodes a raw JSON string that holds padded standard base64
// and nothing else, the form of nearly every chunk, in one pass over its
// bytes: a string the strict decoder takes whole has only base64 characters
// (no escape, quote or control character), so it is also a valid JSON
// string. The decoder skips line breaks silently, and a JSON string may not
// hold them raw: the length of the result shows whether it skipped any. ok
// is false for anything else, which the general path decodes or refuses.
func plainBase64(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	body := raw[1 : len(raw)-1]
	if len(body)%4 != 0 {
		return nil, false
	}
	data := make([]byte, base64.StdEncoding.DecodedLen(len(body)))
	n, err := base64.StdEncoding.Strict().Decode(data, body)
	pad := len(body) - len(bytes.TrimRight(body, "="))
	if err != nil || n != len(body)/4*3-pad {
		return nil, false
	}
	return data[:n], true
}

// decodeBase64 decodes standard base64 (RFC 4648 §4, the alphabet with + and
// /), padded or unpadded. White space is ignored, as MIME encoders insert
// line breaks and agents wrap long lines. Anything else that is not base64
// is refused with what to change: the URL-safe alphabet, a data: URL
// prefix, or another character, each named with its position.
func decodeBase64(s string) ([]byte, error) {
	if data, err := base64.StdEncoding.Strict().DecodeString(s); err == nil {
		return data, nil // the common case: one pass, no copy
	}
	stripped := s
	if strings.ContainsAny(s, " \t\r\n") {
		stripped = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, s)
	}
	enc := base64.StdEncoding.Strict()
	if len(stripped)%4 != 0 && !strings.HasSuffix(stripped, "=") {
		enc = base64.RawStdEncoding.Strict()
	}
	data, err := enc.DecodeString(stripped)
	if err != nil {
		return nil, fmt.Errorf("%w: not valid base64: %s", ErrInvalid, base64Problem(stripped, err))
	}
	return data, nil
}

// base64Alphabet is the standard alphabet of base64.
const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// base64Problem says what is wrong with s, which the decoder refused with
// err, and how to fix it.
func base64Problem(s string, err error) string {
	if strings.HasPrefix(s, "data:") {
		if comma := strings.IndexByte(s, ','); comma >= 0 && comma < 256 {
			return fmt.Sprintf("it starts with the data: URL prefix %s; send only what follows the comma", Quote(s[:comma+1]))
		}
		return "it starts with \"data:\"; send only the base64 text of a data: URL, after its comma"
	}
	if i := strings.IndexAny(s, "-_"); i >= 0 {
		return fmt.Sprintf("%q at byte %d is from the URL-safe alphabet; use the standard alphabet (replace - with + and _ with /)", s[i], i)
	}
	var corrupt base64.CorruptInputError
	if errors.As(err, &corrupt) && int(corrupt) < len(s) {
		i := int(corrupt)
		r, _ := utf8.DecodeRuneInString(s[i:])
		if j := strings.IndexByte(s, '='); j >= 0 && j <= i {
			return fmt.Sprintf("padding '=' at byte %d comes before the end (padding ends a base64 text; several texts joined are not one)", j)
		}
		if strings.ContainsRune(base64Alphabet, r) {
			return fmt.Sprintf("the text of %d characters is cut short (a base64 text is a multiple of 4 characters, less its padding)", len(s))
		}
		return fmt.Sprintf("%s at byte %d is not a base64 character (A-Z a-z 0-9 + / and = at the end); send text with encoding \"utf-8\" instead", Quote(string(r)), i)
	}
	if errors.As(err, &corrupt) {
		return "the text ends in the middle of a character group: check that it was not cut off"
	}
	return err.Error()
}

// MTime reads an mtime argument: an RFC 3339 string such as
// "2024-05-01T12:00:00Z" (fractional seconds and offsets allowed) or a
// number of seconds since the Unix epoch (fractions allowed), as a JSON
// number or a string of digits (the rule for every numeric argument).
func (o *Object) MTime(field string) (time.Time, bool) {
	raw, ok := o.Raw(field)
	if !ok {
		return time.Time{}, false
	}
	var t time.Time
	switch JSONType(raw) {
	case "string":
		s, err := DecodeString(raw)
		if err != nil {
			o.probs.Add(o.Name(field), err)
			return time.Time{}, false
		}
		if _, err := strconv.ParseFloat(s, 64); err == nil && strings.TrimLeft(s, "0123456789.") == "" {
			return o.unixSeconds(field, s)
		}
		t, err = time.Parse(time.RFC3339Nano, s)
		if err != nil {
			o.probs.Addf(o.Name(field), "expected an RFC 3339 time such as \"2024-05-01T12:00:00Z\" or Unix seconds, got %s", Quote(s))
			return time.Time{}, false
		}
	case "number":
		return o.unixSeconds(field, string(raw))
	default:
		o.probs.Addf(o.Name(field), "expected an RFC 3339 string or a number of Unix seconds, got %s", JSONType(raw))
		return time.Time{}, false
	}
	if t.Before(minMTime) || t.After(maxMTime) {
		o.probs.Addf(o.Name(field), "%s is out of range 1970-01-01..9999-12-31", t.Format(time.RFC3339))
		return time.Time{}, false
	}
	return t.UTC(), true
}

// unixSeconds reads an mtime given as a number of Unix seconds. A number
// too large for seconds is named as what it most likely is: milliseconds,
// microseconds or nanoseconds (what JavaScript's Date.now, and many
// languages' clocks, return).
func (o *Object) unixSeconds(field, num string) (time.Time, bool) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) {
		o.probs.Addf(o.Name(field), "Unix seconds %s out of range 0..%d", Quote(num), maxMTime.Unix())
		return time.Time{}, false
	}
	if max := float64(maxMTime.Unix()); f > max {
		for _, u := range []struct {
			name string
			per  float64
		}{{"milliseconds", 1e3}, {"microseconds", 1e6}, {"nanoseconds", 1e9}} {
			if f/u.per <= max {
				o.probs.Addf(o.Name(field), "%s looks like %s since the epoch; send seconds: %d", num, u.name, int64(f/u.per))
				return time.Time{}, false
			}
		}
		o.probs.Addf(o.Name(field), "Unix seconds %s out of range 0..%d", Quote(num), maxMTime.Unix())
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), true
}

// Mode reads a mode argument: permission bits as an octal string, "0644",
// "644" or "0o644". A JSON number is refused because agents send 644 meaning
// octal, which is 0o1204 as a number.
func (o *Object) Mode(field string) (fs.FileMode, bool) {
	raw, ok := o.Raw(field)
	if !ok {
		return 0, false
	}
	if JSONType(raw) != "string" {
		o.probs.Addf(o.Name(field), "expected an octal string such as \"0644\", got %s", JSONType(raw))
		return 0, false
	}
	s, err := DecodeString(raw)
	if err != nil {
		o.probs.Add(o.Name(field), err)
		return 0, false
	}
	digits := strings.TrimPrefix(s, "0o")
	n, err := strconv.ParseUint(digits, 8, 32)
	if err != nil || digits == "" || len(digits) > 4 {
		o.probs.Addf(o.Name(field), "expected an octal string such as \"0644\", got %s", Quote(s))
		return 0, false
	}
	if n > 0o777 {
		o.probs.Addf(o.Name(field), "%s has bits beyond the permissions 0777 (setuid, setgid and sticky are not supported)", Quote(s))
		return 0, false
	}
	if n == 0 {
		o.probs.Addf(o.Name(field), "mode 0 would make the file unreadable; omit mode to use the mount's default")
		return 0, false
	}
	return fs.FileMode(n), true
}

// UploadID reads an upload id: 1 to 128 characters from [A-Za-z0-9._-].
func (o *Object) UploadID(field string, required bool) (string, bool) {
	s, ok := o.Str(field, required)
	if !ok {
		return "", false
	}
	if err := CheckUploadID(s); err != nil {
		o.probs.Addf(o.Name(field), "%v", err)
		return "", false
	}
	return s, true
}

// CheckUploadID returns an error unless s is a valid upload id: 1 to 128
// characters from [A-Za-z0-9._-].
func CheckUploadID(s string) error {
	if s == "" || len(s) > maxUploadID || strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) >= 0 {
		return fmt.Errorf("expected 1 to %d characters from A-Z a-z 0-9 . _ -, got %s", maxUploadID, Quote(s))
	}
	return nil
}

// Pattern reads a glob pattern in path.Match syntax that applies to one
// file name.
func (o *Object) Pattern(field string) (string, bool) {
	s, ok := o.Str(field, false)
	if !ok {
		return "", false
	}
	switch {
	case s == "":
		o.probs.Addf(o.Name(field), "empty pattern; omit it to accept every file")
	case len(s) > maxPatternBytes:
		o.probs.Addf(o.Name(field), "pattern of %d bytes exceeds the limit of %d", len(s), maxPatternBytes)
	case strings.Contains(s, "/"):
		o.probs.Addf(o.Name(field), "a pattern matches a single file name and must not contain '/', got %s", Quote(s))
	default:
		if _, err := path.Match(s, ""); err != nil {
			o.probs.Addf(o.Name(field), "%s is not a valid glob (path.Match syntax: * ? [a-z] [^a-z] \\x): %v", Quote(s), err)
			break
		}
		return s, true
	}
	return "", false
}

// UploadName turns an agent's filename into one clean path component:
// backslashes count as separators and directory parts are dropped, so
// "C:\\Users\\me\\report.pdf" and "../../report.pdf" are both "report.pdf".
func UploadName(filename string) (string, error) {
	base := path.Base(strings.ReplaceAll(filename, `\`, "/"))
	if base == "/" || base == "." || base == ".." {
		return "", fmt.Errorf("%w: %s has no file name after its directory parts are removed", ErrInvalid, Quote(filename))
	}
	return depotpath.CleanName(base)
}

// maxQuoted bounds how much of an agent's value an error message repeats.
const maxQuoted = 80

// Quote returns s quoted for a message, shortened when long, so a value
// sent in the wrong argument (content, say) is never echoed whole.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// FormatMode renders permission bits as the octal string agents send.
func FormatMode(m fs.FileMode) string {
	if m == 0 {
		return ""
	}
	return fmt.Sprintf("%04o", uint32(m.Perm()))
}

// Content is a content argument and the encoding it was sent in, as
// Object.Content reads them, for Fill: Max, set before decoding, bounds
// its decoded bytes.
type Content struct {
	Data     []byte
	Encoding string
	Max      int64
}

// DecodeArg reads field (and the encoding argument) into c.
func (c *Content) DecodeArg(o *Object, field string, _ bool) {
	c.Data, c.Encoding = o.Content(field, c.Max)
}
