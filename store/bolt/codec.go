package bolt

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"time"

	"github.com/depotfs/depotfs/store"
)

// Tree records are binary, since ReadDir decodes one per child (JSON made
// a 10,000-entry listing several times slower). The layout is a format
// byte, the kind, the flags, then the fields in record order: integers as
// uvarints or varints, strings as a uvarint length and bytes, the hash as
// 32 raw bytes (only when flagHash is set), and each time as a marker byte,
// 0 for the zero time, else 1 and a varint of Unix seconds and a uvarint
// of nanoseconds. A placeholder's declared hash follows the hash, as 32 raw
// bytes, only when flagDeclared is set (records written before it existed
// never set it, so they read unchanged). In a keyed store both hashes are
// enciphered (sealer.sealSum): the record keeps the plain SHA-256 agents
// see without showing it to whoever holds the file.
const recordFormat = 1

// Record flags.
const (
	flagPinned = 1 << iota
	flagPresent
	flagExplicit
	flagHash
	flagDeclared
)

// errCorrupt reports a tree record that cannot be decoded.
var errCorrupt = errors.New("corrupt entry record")

// encodeRecord encodes r for the tree bucket, its hashes sealed by c.
func encodeRecord(r *record, c sealer) ([]byte, error) {
	b := make([]byte, 0, 96+len(r.Encoding)+len(r.Source)+len(r.Writer))
	b = append(b, recordFormat, byte(r.Kind))
	var flags byte
	if r.Pinned {
		flags |= flagPinned
	}
	if r.Present {
		flags |= flagPresent
	}
	if r.Explicit {
		flags |= flagExplicit
	}
	var h hash
	if r.SHA256 != "" {
		var err error
		if h, err = parseHash(r.SHA256); err != nil {
			return nil, err
		}
		flags |= flagHash
	}
	var dh hash
	if r.Declared != "" {
		var err error
		if dh, err = parseHash(r.Declared); err != nil {
			return nil, err
		}
		flags |= flagDeclared
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, r.Ino)
	b = binary.AppendVarint(b, r.Size)
	if flags&flagHash != 0 {
		h = c.sealSum(h)
		b = append(b, h[:]...)
	}
	if flags&flagDeclared != 0 {
		dh = c.sealSum(dh)
		b = append(b, dh[:]...)
	}
	b = binary.AppendUvarint(b, uint64(r.Mode))
	b = appendTime(b, r.MTime)
	b = appendString(b, r.Encoding)
	b = appendString(b, r.Source)
	b = appendTime(b, r.Created)
	b = appendTime(b, r.Updated)
	b = binary.AppendUvarint(b, r.Updates)
	b = appendString(b, r.Writer)
	b = appendTime(b, r.Expires)
	b = binary.AppendUvarint(b, r.Revision)
	return b, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendTime writes a time as described at recordFormat.
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// decoder reads a record; the first error sticks.
type decoder struct {
	b   []byte
	err error
	// strs, when not nil, interns the strings decoded: a listing's
	// records share a few writers, sources and encodings, and one string
	// each saves an allocation per record and field (see ReadDirAt).
	strs map[string]string
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.err = errCorrupt
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil || uint64(len(d.b)) < n {
		d.err = errCorrupt
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	b := d.bytes(d.uvarint())
	if d.strs == nil || len(b) == 0 {
		return string(b)
	}
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	d.strs[s] = s
	return s
}

func (d *decoder) time() time.Time {
	if d.byte() == 0 {
		return time.Time{}
	}
	sec := d.varint()
	nsec := d.uvarint()
	if nsec >= 1e9 {
		d.err = errCorrupt
	}
	if d.err != nil {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// decodeRecord decodes a record whose hashes c sealed.
func decodeRecord(v []byte, c sealer) (*record, error) {
	r := new(record)
	if err := decodeInto(r, v, c); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeInto sets r from an encoded record whose hashes c sealed.
func decodeInto(r *record, v []byte, c sealer) error {
	var buf [2]hash
	sum, declared, err := decodeListed(r, v, nil, c, &buf)
	if err != nil {
		return err
	}
	if sum != nil {
		r.SHA256 = hex.EncodeToString(sum)
	}
	if declared != nil {
		r.Declared = hex.EncodeToString(declared)
	}
	return nil
}

// decodeListed is decodeInto that interns the strings in strs (nil: not
// interned) and leaves the record's hashes empty, returning them raw
// instead (nil when absent; valid while v and buf are), opened by c into
// buf when c sealed them, for a listing to spell all of them into one
// string (see listing).
func decodeListed(r *record, v []byte, strs map[string]string, c sealer, buf *[2]hash) (sum, declared []byte, err error) {
	d := decoder{b: v, strs: strs}
	if d.byte() != recordFormat {
		return nil, nil, errCorrupt
	}
	*r = record{Kind: store.Kind(d.byte())}
	flags := d.byte()
	r.Pinned = flags&flagPinned != 0
	r.Present = flags&flagPresent != 0
	r.Explicit = flags&flagExplicit != 0
	r.Ino = d.uvarint()
	r.Size = d.varint()
	if flags&flagHash != 0 {
		sum = d.bytes(32)
	}
	if flags&flagDeclared != 0 {
		declared = d.bytes(32)
	}
	r.Mode = fs.FileMode(d.uvarint())
	r.MTime = d.time()
	r.Encoding = d.string()
	r.Source = d.string()
	r.Created = d.time()
	r.Updated = d.time()
	r.Updates = d.uvarint()
	r.Writer = d.string()
	r.Expires = d.time()
	r.Revision = d.uvarint()
	if d.err == nil && (len(d.b) != 0 || (r.Kind != store.KindFile && r.Kind != store.KindDir) || flags >= flagDeclared<<1) {
		d.err = errCorrupt
	}
	if d.err != nil {
		return nil, nil, d.err
	}
	if c.keyed() {
		if sum != nil {
			buf[0] = c.openSum(hash(sum))
			sum = buf[0][:]
		}
		if declared != nil {
			buf[1] = c.openSum(hash(declared))
			declared = buf[1][:]
		}
	}
	return sum, declared, nil
}

// peekRecord reads what a listing needs of an encoded record (its kind,
// inode number and revision) without decoding the rest, and checks the
// whole record as decodeListed does: a record it accepts decodes, and one
// it refuses does not (FuzzPeekRecord). Nothing is allocated. A listing
// peeks at every child, so it reads the record with a position instead of
// the decoder, whose calls do not inline: the integers of a record are
// mostly one byte, which skip reads in place.
func peekRecord(v []byte) (kind store.Kind, ino, rev uint64, err error) {
	if len(v) < 3 || v[0] != recordFormat {
		return 0, 0, 0, errCorrupt
	}
	kind, flags := store.Kind(v[1]), v[2]
	if (kind != store.KindFile && kind != store.KindDir) || flags >= flagDeclared<<1 {
		return 0, 0, 0, errCorrupt
	}
	at := 3
	ino, at = peekUvarint(v, at)
	at = skipVarint(v, at) // size
	if flags&flagHash != 0 {
		at = skipBytes(v, at, 32)
	}
	if flags&flagDeclared != 0 {
		at = skipBytes(v, at, 32)
	}
	at = skipUvarint(v, at) // mode
	at = skipTimeAt(v, at)  // mtime
	at = skipStringAt(v, at)
	at = skipStringAt(v, at)
	at = skipTimeAt(v, at) // created
	at = skipTimeAt(v, at) // updated
	at = skipUvarint(v, at)
	at = skipStringAt(v, at)
	at = skipTimeAt(v, at) // expires
	rev, at = peekUvarint(v, at)
	if at != len(v) {
		return 0, 0, 0, errCorrupt
	}
	return kind, ino, rev, nil
}

// The peek helpers read at position at of v and return the position
// after what they read, or badAt when v is corrupt there; at badAt they
// read nothing and return badAt, so a corrupt record's error surfaces at
// the end of peekRecord, as the decoder's sticks.
const badAt = -1

// peekUvarint reads a uvarint, as binary.Uvarint.
func peekUvarint(v []byte, at int) (uint64, int) {
	if at >= 0 && at < len(v) && v[at] < 0x80 {
		return uint64(v[at]), at + 1
	}
	return peekUvarintLong(v, at)
}

func peekUvarintLong(v []byte, at int) (uint64, int) {
	if at < 0 || at >= len(v) {
		return 0, badAt
	}
	x, n := binary.Uvarint(v[at:])
	if n <= 0 {
		return 0, badAt
	}
	return x, at + n
}

func skipUvarint(v []byte, at int) int {
	_, at = peekUvarint(v, at)
	return at
}

// skipVarint passes over a varint, as binary.Varint reads it: its
// encoding is a uvarint's.
func skipVarint(v []byte, at int) int { return skipUvarint(v, at) }

// skipBytes passes over n bytes.
func skipBytes(v []byte, at, n int) int {
	if at < 0 || len(v)-at < n {
		return badAt
	}
	return at + n
}

// skipStringAt passes over a string, as decoder.string reads it.
func skipStringAt(v []byte, at int) int {
	n, at := peekUvarint(v, at)
	if at < 0 || uint64(len(v)-at) < n {
		return badAt
	}
	return at + int(n)
}

// skipTimeAt passes over a time, checking it as decoder.time does.
func skipTimeAt(v []byte, at int) int {
	if at < 0 || at >= len(v) {
		return badAt
	}
	if v[at] == 0 {
		return at + 1
	}
	at = skipVarint(v, at+1)
	nsec, at := peekUvarint(v, at)
	if nsec >= 1e9 {
		return badAt
	}
	return at
}
