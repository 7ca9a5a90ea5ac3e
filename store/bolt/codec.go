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

// decoder reads a time as a record encodes it (see dirtime.go); the
// first error sticks. Records themselves are read with a position (see
// decodeListed).
type decoder struct {
	b   []byte
	err error
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
// string (see listing). It reads with a position, as peekRecord does
// (the decoder's calls do not inline, and a lookup decodes a record), and
// accepts what peekRecord accepts.
func decodeListed(r *record, v []byte, strs map[string]string, c sealer, buf *[2]hash) (sum, declared []byte, err error) {
	if len(v) < 3 || v[0] != recordFormat {
		return nil, nil, errCorrupt
	}
	kind, flags := store.Kind(v[1]), v[2]
	if (kind != store.KindFile && kind != store.KindDir) || flags >= flagDeclared<<1 {
		return nil, nil, errCorrupt
	}
	// Built here and copied once: the fields written through r would
	// each cost a write barrier while the collector runs.
	d := record{Kind: kind, Pinned: flags&flagPinned != 0, Present: flags&flagPresent != 0, Explicit: flags&flagExplicit != 0}
	at := 3
	d.Ino, at = peekUvarint(v, at)
	d.Size, at = peekVarint(v, at)
	if flags&flagHash != 0 {
		if at = skipBytes(v, at, 32); at >= 0 {
			sum = v[at-32 : at]
		}
	}
	if flags&flagDeclared != 0 {
		if at = skipBytes(v, at, 32); at >= 0 {
			declared = v[at-32 : at]
		}
	}
	var mode uint64
	mode, at = peekUvarint(v, at)
	d.Mode = fs.FileMode(mode)
	d.MTime, at = peekTime(v, at)
	d.Encoding, at = peekString(v, at, strs)
	d.Source, at = peekString(v, at, strs)
	d.Created, at = peekTime(v, at)
	d.Updated, at = peekTime(v, at)
	d.Updates, at = peekUvarint(v, at)
	d.Writer, at = peekString(v, at, strs)
	d.Expires, at = peekTime(v, at)
	d.Revision, at = peekUvarint(v, at)
	if at != len(v) {
		return nil, nil, errCorrupt
	}
	*r = d
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

// peekVarint reads a varint, as binary.Varint.
func peekVarint(v []byte, at int) (int64, int) {
	u, at := peekUvarint(v, at)
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x, at
}

// peekTime reads a time: a marker byte, 0 for the zero time, else a
// varint of Unix seconds and a uvarint of nanoseconds (as decoder.time).
func peekTime(v []byte, at int) (time.Time, int) {
	if at < 0 || at >= len(v) {
		return time.Time{}, badAt
	}
	if v[at] == 0 {
		return time.Time{}, at + 1
	}
	sec, at := peekVarint(v, at+1)
	nsec, at := peekUvarint(v, at)
	if at < 0 || nsec >= 1e9 {
		return time.Time{}, badAt
	}
	return time.Unix(sec, int64(nsec)).UTC(), at
}

// peekString reads a string: a uvarint length and the bytes. strs, when
// not nil, interns the strings read: a listing's records share a few
// writers, sources and encodings, and one string each saves an
// allocation a record and field (see ReadDirAt).
func peekString(v []byte, at int, strs map[string]string) (string, int) {
	n, at := peekUvarint(v, at)
	if at < 0 || uint64(len(v)-at) < n {
		return "", badAt
	}
	b := v[at : at+int(n)]
	at += int(n)
	if strs == nil || len(b) == 0 {
		return string(b), at
	}
	if s, ok := strs[string(b)]; ok {
		return s, at
	}
	s := string(b)
	strs[s] = s
	return s, at
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

// skipStringAt passes over a string, as peekString reads it.
func skipStringAt(v []byte, at int) int {
	n, at := peekUvarint(v, at)
	if at < 0 || uint64(len(v)-at) < n {
		return badAt
	}
	return at + int(n)
}

// skipTimeAt passes over a time, checking it as peekTime does.
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
