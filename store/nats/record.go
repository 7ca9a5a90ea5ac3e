package nats

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	"github.com/depotfs/depotfs/store"
)

// Keys in the tree bucket. Every key starts with a one-letter kind:
//
//	e.<sha256 of the path>       an entry (record); the path is in the value
//	b.<content sha256>           a blob (blobRecord) with at least one reference
//	d.<content sha256>           the bytes of a small blob stored inline (raw)
//	g.<content sha256>.<gen>     chunks of a dropped blob awaiting deletion (gcRecord)
//	u.<sha256 of the upload id>  a chunked upload (uploadRecord)
//	m.counters                   the store-wide cumulative counters
//	m.root                       the root directory's times
//
// Paths and upload ids are hashed because a KV key is a NATS subject token
// sequence: it allows neither every character of a depot path nor 4096
// bytes of it.
const (
	keyCounters = "m.counters"
	keyRoot     = "m.root" // the root's times (rootRecord)
)

// rootRecord holds the root's mtime: the root has no entry record.
type rootRecord struct {
	MTime time.Time `json:"mt"`
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func entryKey(p string) string     { return "e." + hashHex(p) }
func blobKey(sum string) string    { return "b." + sum }
func dataKey(sum string) string    { return "d." + sum }
func gcKey(sum, gen string) string { return "g." + sum + "." + gen }
func uploadKey(id string) string   { return "u." + hashHex(id) }
func kindOfKey(k string) byte      { return k[0] }
func gcParts(k string) (sum, gen string) {
	if len(k) < 2+64+1 {
		return "", ""
	}
	return k[2 : 2+64], k[2+64+1:]
}

// record is an entry as stored in the tree bucket. Its revision is the KV
// revision (stream sequence) of the message that wrote it, so it is not
// stored.
type record struct {
	Path     string      `json:"p"`
	Kind     store.Kind  `json:"k"`
	Ino      uint64      `json:"i"`
	Size     int64       `json:"s,omitzero"`
	SHA256   string      `json:"h,omitzero"`
	Declared string      `json:"dh,omitzero"` // a placeholder's declared hash
	Mode     fs.FileMode `json:"m,omitzero"`
	MTime    time.Time   `json:"mt,omitzero"`
	Encoding string      `json:"en,omitzero"`
	Source   string      `json:"src,omitzero"`
	Created  time.Time   `json:"c,omitzero"`
	Updated  time.Time   `json:"u,omitzero"`
	Updates  uint64      `json:"n,omitzero"`
	Writer   string      `json:"w,omitzero"`
	Expires  time.Time   `json:"x,omitzero"`
	Pinned   bool        `json:"pin,omitzero"`
	Present  bool        `json:"pr,omitzero"`
	Explicit bool        `json:"ex,omitzero"`

	// Revision is the KV revision of the message that wrote the record,
	// except for a directory whose times alone moved (hdrTouch): it keeps
	// the revision it had, stored in Rev.
	Revision uint64 `json:"-"`
	Rev      uint64 `json:"r,omitzero"`
}

func (r *record) entry() store.Entry {
	return store.Entry{
		Path: r.Path, Kind: r.Kind, Ino: r.Ino,
		Size: r.Size, SHA256: r.SHA256, DeclaredSHA256: r.Declared, Mode: r.Mode, MTime: r.MTime,
		Encoding: r.Encoding, Source: r.Source,
		Created: r.Created, Updated: r.Updated, Updates: r.Updates, Writer: r.Writer,
		Expires: r.Expires, Pinned: r.Pinned, Present: r.Present, Explicit: r.Explicit,
		Revision: r.Revision,
	}
}

// blobRecord is one stored content: its chunks are the messages
// <chunk subject>.<sha256>.<Gen>.<index>, each ChunkSize bytes but the
// last. Gen is chosen by the host that uploaded the chunks, so a blob
// dropped and stored again never shares chunk subjects with its earlier
// life, whose deletion may still be pending.
type blobRecord struct {
	Size      int64  `json:"s"`
	ChunkSize int64  `json:"cs"`
	Gen       string `json:"g"`          // genInline: the bytes are at d.<sha256>
	Refs      uint64 `json:"r"`          // present files using the blob
	Pins      uint64 `json:"p,omitzero"` // pinned present files using it
}

func (b *blobRecord) evictable() bool { return b.Refs > 0 && b.Pins == 0 }

// genInline is the generation of content stored inline in the tree bucket
// (d.<sha256>) rather than as chunks.
const genInline = "inline"

// gcRecord marks the chunks of a dropped blob for deletion once no reader
// can still need them (Options.GCDelay after At).
type gcRecord struct {
	At time.Time `json:"at"`
}

// uploadRecord is a chunked upload in progress (or completed, kept until it
// expires to answer retries). Its chunks are messages
// <chunk subject>.u.<upload key hash>.<index>.<part>.
type uploadRecord struct {
	ID       string           `json:"id"`
	Count    int              `json:"count"`
	File     store.PutRequest `json:"file"` // without Data
	Received int              `json:"received"`
	Bytes    int64            `json:"bytes"`
	Total    int64            `json:"total,omitzero"`
	Started  time.Time        `json:"started"`
	Last     time.Time        `json:"last"`
	// Chunks holds, per received index, the chunk's sha256 and how many
	// parts of at most the chunk size it was stored as.
	Chunks map[int]uploadChunk `json:"chunks"`
	Result *store.PutResult    `json:"result,omitzero"`

	// done is set by the transaction that completes the upload; its
	// Result is filled in once the entry's revision is known.
	done *putOutcome
}

type uploadChunk struct {
	SHA256 string `json:"h"`
	Size   int64  `json:"s"`
	Parts  int    `json:"p"`
}

func (u *uploadRecord) progress() store.UploadProgress {
	p := store.UploadProgress{UploadID: u.ID, Path: u.File.Path, Received: u.Received, Count: u.Count, Bytes: u.Bytes}
	if u.Result != nil {
		p.Complete, p.Result = true, *u.Result
	}
	return p
}

// counters are the cumulative store-wide counts kept in m.counters.
type counters struct {
	Evictions    int64 `json:"ev,omitzero"`
	EvictedBytes int64 `json:"evb,omitzero"`
	Expiries     int64 `json:"exp,omitzero"`
	SweptChunks  int64 `json:"swc,omitzero"` // leaked chunks deleted (SweepChunks)
}

func decode[T any](key string, v []byte) (*T, error) {
	var x T
	if err := json.Unmarshal(v, &x); err != nil {
		return nil, fmt.Errorf("corrupt record %s: %w", key, err)
	}
	return &x, nil
}

// presentSum is the content a file record references, "" for none.
func presentSum(r *record) string {
	if r == nil || r.Kind != store.KindFile || !r.Present {
		return ""
	}
	return r.SHA256
}

// pinnedSum is the content a pinned file references, "" for none.
func pinnedSum(r *record) string {
	if r == nil || !r.Pinned {
		return ""
	}
	return presentSum(r)
}

// expires is when r expires, zero for never (directories and pinned files
// never do).
func expires(r *record) (t time.Time) {
	if r == nil || r.Kind != store.KindFile || r.Pinned {
		return t
	}
	return r.Expires
}

// sameMeta reports whether a and b agree on everything but the revision and
// update time.
func sameMeta(a, b *record) bool {
	x, y := *a, *b
	x.Updated, y.Updated = time.Time{}, time.Time{}
	x.Revision, y.Revision = 0, 0
	return x.MTime.Equal(y.MTime) && x.Expires.Equal(y.Expires) && x.Created.Equal(y.Created) &&
		x.Kind == y.Kind && x.Ino == y.Ino && x.Size == y.Size && x.SHA256 == y.SHA256 && x.Declared == y.Declared &&
		x.Mode == y.Mode && x.Encoding == y.Encoding && x.Source == y.Source &&
		x.Updates == y.Updates && x.Writer == y.Writer && x.Pinned == y.Pinned &&
		x.Present == y.Present && x.Explicit == y.Explicit && x.Path == y.Path
}

// utc normalizes a time for storage: UTC, no monotonic reading; zero stays
// zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Round(0)
}
