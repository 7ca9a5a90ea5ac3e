package nats

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// addresses names content in the tree bucket and the chunk stream. In a
// depot sealed with keyed addresses (a version 2 seal record: every depot
// this build creates with a key) key is its data key: content is stored
// under its id, the hex of seal.Key.Address of its plain SHA-256 (blob,
// inline and gc keys, chunk subjects), and the records that keep a plain
// SHA-256 keep it enciphered (seal.Key.SealSum, in hex), so neither the
// servers' files nor a copy of them confirm a known file's presence or
// show equal content across depots. Otherwise key is nil: the id is the
// plain SHA-256 and records keep it as it is (clear depots, and depots
// sealed before keyed addresses).
//
// Everything else holds plain hashes, the host's state included: the
// mapping is done where a record is encoded (txn.messages) or decoded
// (state.applyOne, replayed) and where a key or subject is made.
type addresses struct{ key *seal.Key }

// errNoSum reports a blob or gc record of a depot with keyed addresses
// that lacks the enciphered hash of its content.
var errNoSum = errors.New("no enciphered content hash")

// keyed reports whether content is stored under keyed addresses.
func (a addresses) keyed() bool { return a.key != nil }

// id is the id content sum is stored under.
func (a addresses) id(sum string) string {
	if a.key == nil {
		return sum
	}
	b, ok := rawSum(sum)
	if !ok {
		// Never a hash this package computed or checked; a key made of
		// it names nothing stored.
		return sum
	}
	id := a.key.Address(b)
	return hex.EncodeToString(id[:])
}

// rawSum decodes a lowercase hex SHA-256.
func rawSum(sum string) ([sha256.Size]byte, bool) {
	var b [sha256.Size]byte
	if len(sum) != hex.EncodedLen(sha256.Size) {
		return b, false
	}
	_, err := hex.Decode(b[:], []byte(sum))
	return b, err == nil
}

// seal returns sum as a record keeps it: enciphered in a keyed depot
// ("" stays ""), else as it is.
func (a addresses) seal(sum string) (string, error) {
	if a.key == nil || sum == "" {
		return sum, nil
	}
	b, ok := rawSum(sum)
	if !ok {
		return "", fmt.Errorf("content hash %q: not a SHA-256", sum)
	}
	h := a.key.SealSum(b)
	return hex.EncodeToString(h[:]), nil
}

// open is the inverse of seal, for a record read from the bucket.
func (a addresses) open(h string) (string, error) {
	if a.key == nil || h == "" {
		return h, nil
	}
	b, ok := rawSum(h)
	if !ok {
		return "", fmt.Errorf("enciphered content hash %q: not 32 bytes in hex", h)
	}
	sum := a.key.OpenSum(b)
	return hex.EncodeToString(sum[:]), nil
}

// sealPair seals the two hashes an entry carries.
func (a addresses) sealPair(sum, declared *string) (err error) {
	if *sum, err = a.seal(*sum); err != nil {
		return err
	}
	*declared, err = a.seal(*declared)
	return err
}

// openPair opens the two hashes an entry carries.
func (a addresses) openPair(sum, declared *string) (err error) {
	if *sum, err = a.open(*sum); err != nil {
		return err
	}
	*declared, err = a.open(*declared)
	return err
}

// sealRecord returns an entry record as the bucket keeps it.
func (a addresses) sealRecord(r entryrec.Record) (entryrec.Record, error) {
	return r, a.sealPair(&r.SHA256, &r.Declared)
}

// openRecord opens, in place, an entry record read from the bucket.
func (a addresses) openRecord(r *entryrec.Record) error {
	return a.openPair(&r.SHA256, &r.Declared)
}

// sealEntry returns an entry (of a change event or an upload's result)
// as the bucket keeps it.
func (a addresses) sealEntry(e store.Entry) (store.Entry, error) {
	return e, a.sealPair(&e.SHA256, &e.DeclaredSHA256)
}

// openEntry opens, in place, an entry read from the bucket.
func (a addresses) openEntry(e *store.Entry) error {
	return a.openPair(&e.SHA256, &e.DeclaredSHA256)
}

// marshal encodes a record of the tree bucket, with the content hashes it
// holds sealed: v is not changed. Records that name no content, and every
// record in a depot without keyed addresses, are encoded as they are.
// Blob and gc records carry their hash (H) already: the caller knows it.
func (a addresses) marshal(v any) ([]byte, error) {
	if a.key == nil {
		return json.Marshal(v)
	}
	var err error
	switch r := v.(type) {
	case *record:
		c := *r
		c.Record, err = a.sealRecord(r.Record)
		v = &c
	case *versionRecord:
		c := *r
		c.record.Record, err = a.sealRecord(r.record.Record)
		v = &c
	case changeRecord:
		evs := make([]store.Event, len(r.Events))
		for i, ev := range r.Events {
			if ev.Entry, err = a.sealEntry(ev.Entry); err != nil {
				return nil, err
			}
			evs[i] = ev
		}
		r.Events = evs
		v = r
	case *uploadRecord:
		v, err = a.sealUpload(r)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// sealUpload returns a copy of an upload record with its hashes sealed:
// the file's declared hash, its chunks' hashes and its result's entry.
func (a addresses) sealUpload(u *uploadRecord) (*uploadRecord, error) {
	c := *u
	var err error
	if c.File.SHA256, err = a.seal(u.File.SHA256); err != nil {
		return nil, err
	}
	if u.Chunks != nil {
		c.Chunks = make(map[int]uploadChunk, len(u.Chunks))
		for i, ch := range u.Chunks {
			if ch.SHA256, err = a.seal(ch.SHA256); err != nil {
				return nil, err
			}
			c.Chunks[i] = ch
		}
	}
	if u.Result != nil {
		res := *u.Result
		if res.Entry, err = a.sealEntry(res.Entry); err != nil {
			return nil, err
		}
		c.Result = &res
	}
	return &c, nil
}

// openUpload opens, in place, an upload record read from the bucket.
func (a addresses) openUpload(u *uploadRecord) error {
	if a.key == nil {
		return nil
	}
	var err error
	if u.File.SHA256, err = a.open(u.File.SHA256); err != nil {
		return err
	}
	for i, ch := range u.Chunks {
		if ch.SHA256, err = a.open(ch.SHA256); err != nil {
			return err
		}
		u.Chunks[i] = ch
	}
	if u.Result != nil {
		return a.openEntry(&u.Result.Entry)
	}
	return nil
}
