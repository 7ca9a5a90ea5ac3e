package args

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// textEncodings are the encodings DecodeText knows, each under its
// canonical name (first) and the other spellings Python accepts. The
// decoders of valid UTF-8, ASCII and Latin-1 are strict: they fail on bytes
// the encoding cannot hold, as Python's codecs do; the x/text ones replace
// such bytes with U+FFFD instead.
var textEncodings = []struct {
	names  []string
	decode func([]byte) (string, error)
}{
	{[]string{"utf-8", "utf8", "u8", "utf"}, decodeUTF8},
	{[]string{"utf-8-sig", "utf8-sig"}, func(b []byte) (string, error) { return decodeUTF8(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))) }},
	{[]string{"ascii", "us-ascii", "646"}, decodeASCII},
	{[]string{"latin-1", "latin1", "iso-8859-1", "iso8859-1", "l1", "8859"}, decodeLatin1},
	{[]string{"utf-16", "utf16"}, xtext(unicode.UTF16(unicode.LittleEndian, unicode.UseBOM))},
	{[]string{"utf-16-le", "utf-16le"}, xtext(unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM))},
	{[]string{"utf-16-be", "utf-16be"}, xtext(unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM))},
	{[]string{"cp1252", "windows-1252"}, xtext(charmap.Windows1252)},
	{[]string{"iso-8859-15", "latin-9", "latin9"}, xtext(charmap.ISO8859_15)},
	{[]string{"cp1251", "windows-1251"}, xtext(charmap.Windows1251)},
	{[]string{"cp437"}, xtext(charmap.CodePage437)},
	{[]string{"mac-roman", "macroman"}, xtext(charmap.Macintosh)},
	{[]string{"koi8-r", "koi8r"}, xtext(charmap.KOI8R)},
}

// LookupEncoding returns the decoder for an encoding name, spelled as
// Python accepts it (case and "_" versus "-" do not matter).
func LookupEncoding(name string) (func([]byte) (string, error), bool) {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
	for _, e := range textEncodings {
		if slices.Contains(e.names, n) {
			return e.decode, true
		}
	}
	return nil, false
}

// EncodingNames lists the canonical encoding names, for messages.
func EncodingNames() []string {
	names := make([]string, len(textEncodings))
	for i, e := range textEncodings {
		names[i] = e.names[0]
	}
	return names
}

// DecodeText decodes data in the named encoding (already checked by
// lookupEncoding).
func DecodeText(data []byte, name string) (string, error) {
	decode, ok := LookupEncoding(name)
	if !ok {
		return "", fmt.Errorf("unknown encoding %q", name)
	}
	return decode(data)
}

// decodeUTF8 accepts valid UTF-8 only and reports where it is not.
func decodeUTF8(b []byte) (string, error) {
	if utf8.Valid(b) {
		return string(b), nil
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return "", fmt.Errorf("'utf-8' codec can't decode byte 0x%02x in position %d: invalid UTF-8; read it with read_file_binary or name its encoding", b[i], i)
		}
		i += n
	}
	return string(b), nil
}

// decodeASCII accepts bytes below 0x80 only.
func decodeASCII(b []byte) (string, error) {
	for i, c := range b {
		if c >= 0x80 {
			return "", fmt.Errorf("'ascii' codec can't decode byte 0x%02x in position %d: ordinal not in range(128)", c, i)
		}
	}
	return string(b), nil
}

// decodeLatin1 maps each byte to the code point of the same value.
func decodeLatin1(b []byte) (string, error) {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r), nil
}

// xtext adapts an x/text encoding.
func xtext(e encoding.Encoding) func([]byte) (string, error) {
	return func(b []byte) (string, error) {
		out, err := e.NewDecoder().Bytes(b)
		return string(out), err
	}
}
