package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Decision is whether a call or authentication was let through.
type Decision string

// Decisions.
const (
	// Allow: the caller's grants and the server's policy allowed the call;
	// it may still have failed (Record.Error says how).
	Allow Decision = "allow"
	// Deny: the call was refused by grants, policy, a rate limit or a
	// failed authentication; it changed nothing.
	Deny Decision = "deny"
)

// Events.
const (
	EventCall = "call" // a tool call
	EventAuth = "auth" // a refused TLS handshake or authentication
	// EventRecovery is written by Open when it continues a log whose last
	// records follow the checkpoint (a crash between a write and its
	// checkpoint, or unkeyed records from an older depotfs): Reason names
	// them, so they are never adopted silently.
	EventRecovery = "recovery"
)

// Record versions. Version 1 (written by depotfs before keyed chaining,
// "v" absent) hashes a record with plain SHA-256, so anyone who can write
// the log can append records that chain; only the checkpoint vouches for
// them. Version 2 hashes with HMAC-SHA-256 under the log's key, so forging
// or re-chaining a record needs the key. A log may hold version 1 records
// followed by version 2 records (an upgraded log), never the reverse.
const (
	versionSHA256 = 0 // written as an absent "v"
	versionKeyed  = 2
)

// MaxPaths bounds Record.Paths; a call that names more (a large listing)
// records the first MaxPaths and the count of the rest in MorePaths.
const MaxPaths = 64

// Record is one line of the audit log. Seq, Prev and Hash are set by
// Log.Append; the caller fills in the rest. Records are values.
type Record struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"` // UTC
	// Event is EventCall or EventAuth.
	Event     string `json:"event"`
	RequestID string `json:"request_id,omitempty"`
	Session   string `json:"session,omitempty"` // MCP session id
	Transport string `json:"transport,omitempty"`
	Remote    string `json:"remote,omitempty"` // peer address
	// Identity is the caller, "<transport>:<subject>"; for a refused
	// authentication, the subject the credential claimed, if any.
	Identity string `json:"identity,omitempty"`
	Auth     string `json:"auth,omitempty"` // how the identity was established: cert, token, os
	Serial   string `json:"serial,omitempty"`
	TokenID  string `json:"token_id,omitempty"`
	// Stage is where an authentication failed: "handshake" or "request".
	Stage   string `json:"stage,omitempty"`
	Resumed bool   `json:"resumed,omitempty"` // a resumed TLS session
	Tool    string `json:"tool,omitempty"`
	// Paths are the normalized depot paths the call named or touched.
	Paths     []string `json:"paths,omitempty"`
	MorePaths int      `json:"more_paths,omitempty"`
	Decision  Decision `json:"decision"`
	// Reason says why: the rule that denied, the grant that allowed, the
	// authentication failure.
	Reason string `json:"reason,omitempty"`
	// Count is how many refusals the record stands for when it sums up a
	// burst of them (Bursts, and the grouped refused authentications);
	// absent means one. The other members are those of the latest.
	Count int `json:"count,omitempty"`
	// Content describes the bytes a call carried, never the bytes.
	Content *Content `json:"content,omitempty"`
	Status  string   `json:"status,omitempty"` // what the call did: created, updated, partial...
	// Cancelled: the caller went away (or cancelled the request) before
	// the call finished; Status and Error say how far it got.
	Cancelled bool `json:"cancelled,omitempty"`
	// Error is the envelope's error type of a failed call.
	Error string `json:"error,omitempty"`
	// Amends is the seq of this call's earlier record, written while its
	// change was being committed (Log.AppendEarly), when the commit then
	// failed: this record, not that one, says what the call did.
	Amends     uint64  `json:"amends,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	// V is the record's version: 0 (absent) for unkeyed records of an
	// older depotfs, 2 for records chained under the key.
	V    int    `json:"v,omitempty"`
	Prev string `json:"prev"`
	Hash string `json:"hash,omitempty"`
}

// Content is the size and SHA-256 of the content of a call.
type Content struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// genesis is the prev of the first record.
var genesis = hex.EncodeToString(make([]byte, sha256.Size))

// hashKey ends every line: `,"hash":"<64 hex>"}`.
var hashKey = []byte(`,"hash":"`)

// lineSuffix is the length of `,"hash":"<64 hex>"}`.
const lineSuffix = 9 + 64 + 2

// ErrRecord reports a line that is not a well-formed record.
var ErrRecord = errors.New("malformed audit record")

// sum returns the hash a record of version v with canonical bytes body
// must state: HMAC-SHA-256 under key for keyed records, SHA-256 for
// version 1. A keyed record without a key never matches.
func sum(v int, key, body []byte) string {
	if v == versionSHA256 {
		h := sha256.Sum256(body)
		return hex.EncodeToString(h[:])
	}
	if key == nil {
		return ""
	}
	return hmacHex(key, body)
}

// encode returns the record's line (with its newline) and hash under key;
// r.Hash is ignored.
func encode(r *Record, key []byte) (line []byte, hash string, err error) {
	c := *r
	c.Hash = ""
	body, err := json.Marshal(&c)
	if err != nil {
		return nil, "", fmt.Errorf("encode audit record: %w", err)
	}
	hash = sum(c.V, key, body)
	return slices.Concat(body[:len(body)-1], hashKey, []byte(hash), []byte("\"}\n")), hash, nil
}

// decode parses one line (without its newline). It returns the record,
// whose Hash is the one the line states, and whether that hash matches the
// line's canonical bytes under key (nil: keyed records never match). A
// line that cannot be parsed is an ErrRecord.
func decode(line, key []byte) (r Record, intact bool, err error) {
	n := len(line)
	if n < lineSuffix+2 || line[0] != '{' || !bytes.Equal(line[n-lineSuffix:n-lineSuffix+len(hashKey)], hashKey) || string(line[n-2:]) != "\"}" {
		return Record{}, false, fmt.Errorf("%w: does not end with its hash", ErrRecord)
	}
	stated := string(line[n-lineSuffix+len(hashKey) : n-2])
	if _, err := hex.DecodeString(stated); err != nil || len(stated) != 64 {
		return Record{}, false, fmt.Errorf("%w: hash is not 64 hex digits", ErrRecord)
	}
	body := append(line[:n-lineSuffix:n-lineSuffix], '}') // a copy: the capacity is full
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, false, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	if dec.More() {
		return Record{}, false, fmt.Errorf("%w: trailing data", ErrRecord)
	}
	if r.V != versionSHA256 && r.V != versionKeyed {
		return Record{}, false, fmt.Errorf("%w: unknown record version %d", ErrRecord, r.V)
	}
	r.Hash = stated
	return r, hmac.Equal([]byte(sum(r.V, key, body)), []byte(stated)), nil
}
