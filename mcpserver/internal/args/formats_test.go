package args

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func TestDecodeBase64(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "aGVsbG8=", want: "hello"},
		{in: "aGVsbG8", want: "hello"},
		{in: "aGVs\r\nbG8=", want: "hello"},
		{in: "aGVs bG8\t=", want: "hello"},
		{in: "-_-_", err: "'-' at byte 0 is from the URL-safe alphabet"},
		{in: "data:text/plain;base64,aGk=", err: `"data:text/plain;base64,"`},
		{in: "héllo", err: `"é" at byte 1 is not a base64 character`},
		{in: "aGk=aGk=", err: "padding '=' at byte 3"},
	}
	for _, tt := range tests {
		got, err := decodeBase64(tt.in)
		switch {
		case tt.err == "" && (err != nil || string(got) != tt.want):
			t.Errorf("decodeBase64(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("decodeBase64(%q) error %v, want one saying %s", tt.in, err, tt.err)
		}
	}
}

// FuzzDecodeBase64 checks that decodeBase64 accepts exactly standard
// base64 with white space anywhere and optional padding, and decodes it as
// encoding/base64 does.
func FuzzDecodeBase64(f *testing.F) {
	for _, s := range []string{"aGVsbG8=", "aGVsbG8", "aGVs bG8=", "-_", "data:x;base64,aGk=", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := decodeBase64(s)
		stripped := strings.NewReplacer(" ", "", "\t", "", "\r", "", "\n", "").Replace(s)
		want, werr := base64.StdEncoding.Strict().DecodeString(stripped)
		if werr != nil {
			want, werr = base64.RawStdEncoding.Strict().DecodeString(stripped)
		}
		if (err == nil) != (werr == nil) || err == nil && !bytes.Equal(got, want) {
			t.Fatalf("decodeBase64(%q) = %q, %v; encoding/base64: %q, %v", s, got, err, want, werr)
		}
	})
}
