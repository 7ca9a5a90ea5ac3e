package args

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// decodeOne decodes {"v": raw} and returns the object and its problems.
func decodeOne(t *testing.T, raw string) (*Object, *Problems) {
	t.Helper()
	var p Problems
	o := Decode(json.RawMessage(`{"v":`+raw+`}`), "arguments", "", &p)
	if o == nil {
		t.Fatalf("Decode(%s) refused the object: %v", raw, p.Err())
	}
	return o, &p
}

func TestIntAcceptsDecimalStrings(t *testing.T) {
	tests := []struct {
		raw  string
		want int64
		err  string
	}{
		{raw: `3600`, want: 3600},
		{raw: `"3600"`, want: 3600},
		{raw: `" 42 "`, want: 42},
		{raw: `3e2`, want: 300},
		{raw: `"3e2"`, err: "string of decimal digits"},
		{raw: `"an hour"`, err: "string of decimal digits"},
		{raw: `"0"`, err: "below the minimum 1"},
		{raw: `"99999999999999999999"`, err: "string of decimal digits"},
		{raw: `true`, err: "expected integer, got boolean"},
	}
	schema, err := ParseSchema([]byte(`{"properties": {"v": {"type": "integer", "minimum": 1, "maximum": 1099511627776}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		var p Problems
		p.Check(schema)
		o := Decode(json.RawMessage(`{"v":`+tt.raw+`}`), "arguments", "", &p)
		n, ok := o.Int("v", true)
		switch {
		case tt.err == "" && (!ok || n != tt.want || !p.OK()):
			t.Errorf("Int(%s) = %d, %v (%v); want %d", tt.raw, n, ok, p.Err(), tt.want)
		case tt.err != "" && (ok || p.OK() || !strings.Contains(p.Err().Error(), tt.err)):
			t.Errorf("Int(%s) = %d, %v (%v); want an error saying %q", tt.raw, n, ok, p.Err(), tt.err)
		}
	}
}

func TestEncodingSpellings(t *testing.T) {
	for raw, want := range map[string]string{
		`"utf-8"`: EncodingUTF8, `"utf8"`: EncodingUTF8, `"UTF-8"`: EncodingUTF8, `"Utf8"`: EncodingUTF8,
		`"base64"`: EncodingBase64, `"BASE64"`: EncodingBase64, `"Binary"`: "binary",
	} {
		o, p := decodeOne(t, raw)
		if got, ok := o.Encoding("v", "binary"); !ok || got != want || !p.OK() {
			t.Errorf("Encoding(%s) = %q, %v (%v); want %q", raw, got, ok, p.Err(), want)
		}
	}
	o, p := decodeOne(t, `"utf16"`)
	if _, ok := o.Encoding("v"); ok || !strings.Contains(p.Err().Error(), `"utf8"`) {
		t.Errorf("Encoding(utf16): %v, want a refusal listing both spellings", p.Err())
	}
}

func TestMTimeForms(t *testing.T) {
	tests := []struct {
		raw  string
		want time.Time
		err  string
	}{
		{raw: `1714564800`, want: time.Unix(1714564800, 0)},
		{raw: `"1714564800"`, want: time.Unix(1714564800, 0)},
		{raw: `"1714564800.5"`, want: time.Unix(1714564800, 5e8)},
		{raw: `"2024-05-01T12:00:00Z"`, want: time.Unix(1714564800, 0)},
		{raw: `1714564800000`, err: "looks like milliseconds since the epoch; send seconds: 1714564800"},
		{raw: `"1714564800000000"`, err: "looks like microseconds"},
		{raw: `-1`, err: "out of range"},
		{raw: `"yesterday"`, err: "RFC 3339"},
	}
	for _, tt := range tests {
		o, p := decodeOne(t, tt.raw)
		got, ok := o.MTime("v")
		switch {
		case tt.err == "" && (!ok || !got.Equal(tt.want)):
			t.Errorf("MTime(%s) = %v, %v (%v); want %v", tt.raw, got, ok, p.Err(), tt.want)
		case tt.err != "" && (ok || !strings.Contains(p.Err().Error(), tt.err)):
			t.Errorf("MTime(%s) = %v (%v); want an error saying %q", tt.raw, got, p.Err(), tt.err)
		}
	}
}

func TestHostPathWarnings(t *testing.T) {
	for raw, want := range map[string]string{
		`"C:\\Users\\me\\x.txt"`: `"/C:/Users/me/x.txt"`,
		`"d:/data/y"`:            `"/d:/data/y"`,
		`"~/notes.txt"`:          `"/~/notes.txt"`,
		`"/plain/z.txt"`:         "",
		`"/a:b"`:                 "",
	} {
		o, p := decodeOne(t, raw)
		if _, ok := o.DepotPath("v", true); !ok {
			t.Fatalf("DepotPath(%s): %v", raw, p.Err())
		}
		w := p.Warnings()
		switch {
		case want == "" && len(w) != 0:
			t.Errorf("DepotPath(%s) warned %q", raw, w)
		case want != "" && (len(w) != 1 || !strings.Contains(w[0], want)):
			t.Errorf("DepotPath(%s) warnings %q, want one naming %s", raw, w, want)
		}
	}
}
