package audit

import (
	"bytes"
	"testing"
)

// FuzzDecode: audit lines are read back from a file anyone with write
// access may have edited. decode never panics; a line it finds intact
// under the key is, byte for byte, what encode writes for the record it
// returns, so no second spelling of a record verifies. Seeds:
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	key := bytes.Repeat([]byte{7}, 32)
	r := &Record{Seq: 3, Event: EventCall, Tool: "guide_cache_file", Paths: []string{"/a"}, Decision: Allow, V: versionKeyed, Prev: genesis}
	line, _, _ := encode(r, key)
	f.Add(bytes.TrimSuffix(line, []byte("\n")))
	r.V = versionSHA256
	line, _, _ = encode(r, key)
	f.Add(bytes.TrimSuffix(line, []byte("\n")))
	f.Add([]byte(`{"seq":1,"hash":"00"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, intact, err := decode(line, key)
		if err != nil {
			if intact {
				t.Fatal("intact with an error")
			}
			return
		}
		if !intact {
			return
		}
		again, hash, err := encode(&rec, key)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if hash != rec.Hash || !bytes.Equal(bytes.TrimSuffix(again, []byte("\n")), line) {
			t.Fatalf("a line verifies but is not what encode writes:\n%s\n%s", line, again)
		}
	})
}
