// Package clip bounds strings a client chose (tool and argument names,
// identities, request ids) before they reach a reply, a log line or an
// audit record, so a 32 MiB name costs a few hundred bytes wherever it is
// echoed. A clipped string keeps its head, its length and a hash of the
// whole, so two long names can still be told apart and matched against a
// copy the operator holds. The package has no state.
package clip

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// Max is the length in bytes beyond which String clips; a clipped string
// is at most Max plus the length of its suffix (about 60 bytes).
const Max = 256

// String returns s unchanged when it is at most Max bytes, else its first
// bytes (cut on a rune boundary) followed by "…[N bytes, sha256:H]" where H
// is the first 16 hex digits of the SHA-256 of s. It is safe for
// concurrent use.
func String(s string) string {
	return N(s, Max)
}

// N is String with a bound of max bytes instead of Max.
func N(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(s))
	return s[:cut] + "…[" + strconv.Itoa(len(s)) + " bytes, sha256:" + hex.EncodeToString(sum[:8]) + "]"
}
