package args

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
)

// FuzzSplitObject checks the fast split against encoding/json: on valid
// JSON it finds the same members with the same raw values; on invalid JSON
// it either declines or the fault is inside a string value, which every
// getter validates before use.
func FuzzSplitObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` { "a" : "x\"y" , "b":[1,{"c":"]"}], "d":null } `, `{"a":1,"a":2}`, `{"a":"\u0001"}`, `{"a":1}x`, `{"a":tru}`, `{"a":"x\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		keys, values, ok := splitObject(raw)
		if !ok {
			return
		}
		if !json.Valid(raw) {
			for _, v := range values {
				if v[0] == '"' && !json.Valid(v) {
					return
				}
			}
			t.Fatalf("splitObject accepted invalid JSON %q with every string valid", raw)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || len(m) != len(keys) {
			t.Fatalf("splitObject(%q) = %q; encoding/json: %v, %v", raw, keys, m, err)
		}
		for i, k := range keys {
			if !bytes.Equal(m[k], values[i]) {
				t.Fatalf("splitObject(%q): %q = %q, encoding/json %q", raw, k, values[i], m[k])
			}
		}
	})
}

// FuzzPlainBase64 checks that the one-pass base64 path accepts only JSON
// strings whose text is padded standard base64, and decodes them as the
// general path does.
func FuzzPlainBase64(f *testing.F) {
	for _, s := range []string{`"aGVsbG8="`, `"aGVs\nbG8="`, "\"aGVs\nbG8=\"", `"aGk"`, `""`, `"===="`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := plainBase64(raw)
		if !ok {
			return
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("plainBase64 accepted %q, not a JSON string: %v", raw, err)
		}
		want, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("plainBase64(%q) = %q; encoding/base64: %q, %v", raw, got, want, err)
		}
	})
}
