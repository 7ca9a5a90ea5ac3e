package args

import (
	"encoding/json"
	"testing"
)

// FuzzPlainString checks that the fast path of DecodeString accepts only
// strings that encoding/json decodes to exactly the same text.
func FuzzPlainString(f *testing.F) {
	for _, s := range []string{`"aGVsbG8="`, `""`, `"a\"b"`, `"a\\nb"`, "\"tab\there\"", `"é"`, `"unterminated`, `"a"b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, ok := plainString(raw)
		if !ok {
			return
		}
		var slow string
		if err := json.Unmarshal(raw, &slow); err != nil || slow != fast {
			t.Fatalf("plainString(%q) = %q, encoding/json: %q, %v", raw, fast, slow, err)
		}
	})
}
