package args

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// textEncoding decodes bytes into text. strict decoders fail on bytes the
// encoding cannot hold, as Python's codecs do; the x/text ones replace
// such bytes with U+FFFD instead.
type textEncoding struct {
	decode func([]byte) (string, error)
}

// LookupEncoding returns the decoder for an encoding name, spelled as
// Python accepts it (case and "_" versus "-" do not matter).
func LookupEncoding(name string) (textEncoding, bool) {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
	switch n {
	case "utf-8", "utf8", "u8", "utf":
		return textEncoding{decodeUTF8}, true
	case "utf-8-sig", "utf8-sig":
		return textEncoding{func(b []byte) (string, error) { return decodeUTF8(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))) }}, true
	case "ascii", "us-ascii", "646":
		return textEncoding{decodeASCII}, true
	case "latin-1", "latin1", "iso-8859-1", "iso8859-1", "l1", "8859":
		return textEncoding{decodeLatin1}, true
	case "utf-16", "utf16":
		return textEncoding{xtext(unicode.UTF16(unicode.LittleEndian, unicode.UseBOM))}, true
	case "utf-16-le", "utf-16le":
		return textEncoding{xtext(unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM))}, true
	case "utf-16-be", "utf-16be":
		return textEncoding{xtext(unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM))}, true
	case "cp1252", "windows-1252":
		return textEncoding{xtext(charmap.Windows1252)}, true
	case "iso-8859-15", "latin-9", "latin9":
		return textEncoding{xtext(charmap.ISO8859_15)}, true
	case "cp1251", "windows-1251":
		return textEncoding{xtext(charmap.Windows1251)}, true
	case "cp437":
		return textEncoding{xtext(charmap.CodePage437)}, true
	case "mac-roman", "macroman":
		return textEncoding{xtext(charmap.Macintosh)}, true
	case "koi8-r", "koi8r":
		return textEncoding{xtext(charmap.KOI8R)}, true
	}
	return textEncoding{}, false
}

// EncodingNames lists the canonical encoding names, for messages.
func EncodingNames() []string {
	return []string{"utf-8", "utf-8-sig", "ascii", "latin-1", "utf-16", "utf-16-le", "utf-16-be",
		"cp1252", "iso-8859-15", "cp1251", "cp437", "mac-roman", "koi8-r"}
}

// DecodeText decodes data in the named encoding (already checked by
// lookupEncoding).
func DecodeText(data []byte, name string) (string, error) {
	enc, ok := LookupEncoding(name)
	if !ok {
		return "", fmt.Errorf("unknown encoding %q", name)
	}
	return enc.decode(data)
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
