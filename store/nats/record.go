package nats

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/rules"
	"github.com/depotfs/depotfs/store/internal/uploadrec"
)

// Keys in the tree bucket. Every key starts with a one-letter kind:
//
//	e.<sha256 of the path>       an entry (record); the path is in the value
//	b.<content id>               a blob (blobRecord) with at least one reference
//	d.<content id>               the bytes of a small blob stored inline (raw)
//	g.<content id>.<gen>         chunks of a dropped blob awaiting deletion (gcRecord)
//	u.<sha256 of the upload id>  a chunked upload (uploadRecord)
//	v.<sha256 of the path>.<rev> a retained version written at rev (versionRecord)
//	s.<sha256 of the name>       a snapshot (store.Snapshot)
//	t.<sha256 of the path>.<rev> a directory's times before they moved at rev (dirTimeRecord)
//	m.counters                   the store-wide cumulative counters
//	m.root                       the root directory's times
//	m.depot                      the depot's id (depotRecord)
//
// A content id is its sha256, or in a depot sealed with keyed addresses
// its keyed address (see addresses). Paths and upload ids are hashed
// because a KV key is a NATS subject token sequence: it allows neither
// every character of a depot path nor 4096 bytes of it.
const (
	keyCounters = "m.counters"
	keyRoot     = "m.root"  // the root's times (rootRecord)
	keyDepot    = "m.depot" // the depot's id (depotRecord)
	// keyPing is never written: Ping purges it, which needs the stream's
	// quorum and changes nothing.
	keyPing = "m.ping"
	// keyFence is written, empty, to settle an unconfirmed commit (see
	// Store.fence); hosts ignore it.
	keyFence = "m.fence"
	// keyHostPrefix and a host's random id name the host's marker, the
	// first message of each of its batches (see txn.messages); hosts
	// ignore it.
	keyHostPrefix = "m.h."
)

// rootRecord holds the root's mtime: the root has no entry record.
type rootRecord struct {
	MTime time.Time `json:"mt"`
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func entryKey(p string) string { return "e." + hashHex(p) }

// blobKey, dataKey and gcKey take a content id (addresses.id).
func blobKey(id string) string    { return "b." + id }
func dataKey(id string) string    { return "d." + id }
func gcKey(id, gen string) string { return "g." + id + "." + gen }
func uploadKey(id string) string  { return "u." + hashHex(id) }
func kindOfKey(k string) byte     { return k[0] }
func gcParts(k string) (id, gen string) {
	if len(k) < 2+64+1 {
		return "", ""
	}
	return k[2 : 2+64], k[2+64+1:]
}

// record is an entry as stored in the tree bucket: its path, then the
// fields of entryrec.Record (JSON promotes them, so the stored form is
// flat). Its revision is the KV revision (stream sequence) of the message
// that wrote it, so it is not stored, except for a directory whose times
// alone moved (hdrTouch): it keeps the revision it had, stored in Rev.
type record struct {
	Path string `json:"p"`
	entryrec.Record
	Rev uint64 `json:"r,omitzero"`
}

// entry is the entry r shows.
func (r *record) entry() store.Entry { return r.Record.Entry(r.Path) }

// rec is r without its path; nil for nil.
func (r *record) rec() *entryrec.Record {
	if r == nil {
		return nil
	}
	return &r.Record
}

// blobRecord is one stored content: its chunks are the messages
// <chunk subject>.<content id>.<Gen>.<index>, each ChunkSize bytes but the
// last. Gen is chosen by the host that uploaded the chunks, so a blob
// dropped and stored again never shares chunk subjects with its earlier
// life, whose deletion may still be pending.
type blobRecord struct {
	Size      int64  `json:"s"`
	ChunkSize int64  `json:"cs"`
	Gen       string `json:"g"`          // genInline: the bytes are at d.<sha256>
	Refs      uint64 `json:"r"`          // present files using the blob
	Pins      uint64 `json:"p,omitzero"` // pinned present files and held versions using it
	Versions  uint64 `json:"v,omitzero"` // retained versions among the Refs
	// H is the content's sha256 enciphered (addresses.seal) in a depot
	// with keyed addresses, whose key names only its address; empty in
	// memory and in other depots. The delete marker of such a blob
	// carries it too.
	H string `json:"h,omitempty"`
}

// heldOnly reports whether only retained versions use the blob
// (store.Stats.HeldBytes).
func (b *blobRecord) heldOnly() bool { return b.Refs > 0 && b.Refs == b.Versions }

func (b *blobRecord) evictable() bool { return b.Refs > 0 && b.Pins == 0 }

// genInline is the generation of content stored inline in the tree bucket
// (d.<sha256>) rather than as chunks.
const genInline = "inline"

// gcRecord marks the chunks of a dropped blob for deletion once no reader
// can still need them (Options.GCDelay after At).
type gcRecord struct {
	At time.Time `json:"at"`
	H  string    `json:"h,omitempty"` // as blobRecord.H

	sum string // the content's sha256, as applied
}

// uploadRecord is a chunked upload in progress (or completed, kept until
// it expires to answer retries), under its id. Its chunks are messages
// <chunk subject>.u.<upload key hash>.<index>.<part>.
type uploadRecord struct {
	ID string `json:"id"`
	uploadrec.Upload
	// Chunks holds, per received index, the chunk's sha256 and how many
	// parts of at most the chunk size it was stored as.
	Chunks map[int]uploadChunk `json:"chunks"`

	// done is set by the transaction that completes the upload; its
	// Result is filled in once the entry's revision is known.
	done *rules.Written
}

type uploadChunk struct {
	SHA256 string `json:"h"`
	Size   int64  `json:"s"`
	Parts  int    `json:"p"`
}

// counters are the cumulative store-wide counts kept in m.counters.
type counters struct {
	Evictions    int64 `json:"ev,omitzero"`
	EvictedBytes int64 `json:"evb,omitzero"`
	Expiries     int64 `json:"exp,omitzero"`
	SweptChunks  int64 `json:"swc,omitzero"` // leaked chunks deleted (SweepChunks)
}

// decodeUnless decodes the record v at key, unless del (a deletion):
// nil then.
func decodeUnless[T any](del bool, key string, v []byte) (*T, error) {
	if del {
		return nil, nil
	}
	return decode[T](key, v)
}

func decode[T any](key string, v []byte) (*T, error) {
	var x T
	if err := json.Unmarshal(v, &x); err != nil {
		return nil, fmt.Errorf("corrupt record %s: %w", key, err)
	}
	return &x, nil
}
