package bolt

import (
	"encoding/binary"
	"fmt"

	"github.com/depotfs/depotfs/store/internal/entryrec"
	bbolt "go.etcd.io/bbolt"
)

// counters are the store-wide counts kept in the meta bucket and changed
// by the write transactions that change what they count, so they are
// always exact at a commit. Hits, Misses and UseSeq change on reads: they
// are counted in memory (see uses) and written by the next transaction.
type counters struct {
	entryrec.Counts               // entries and the sizes of present files
	Stored, Blobs           int64 // referenced blobs: bytes and count
	Evictions, EvictedBytes int64
	Expiries                int64
	Hits, Misses            int64
	UseSeq                  int64 // the last use number handed out
	Versions, Held          int64 // retained versions; bytes only they use
	Snapshots               int64
}

// fields lists the counters in their stored order. New counters go at the
// end: a shorter stored value leaves the missing ones 0.
func (c *counters) fields() []*int64 {
	return []*int64{
		&c.Files, &c.Placeholders, &c.Dirs, &c.Logical, &c.Stored, &c.Blobs,
		&c.Evictions, &c.EvictedBytes, &c.Expiries, &c.Hits, &c.Misses, &c.UseSeq,
		&c.Versions, &c.Held, &c.Snapshots,
	}
}

func (c *counters) encode() []byte {
	fs := c.fields()
	v := make([]byte, 0, 8*len(fs))
	for _, f := range fs {
		v = binary.BigEndian.AppendUint64(v, uint64(*f))
	}
	return v
}

func (c *counters) decode(v []byte) error {
	*c = counters{}
	if len(v)%8 != 0 {
		return fmt.Errorf("corrupt counters (%d bytes)", len(v))
	}
	for i, f := range c.fields() {
		if 8*i >= len(v) {
			break
		}
		*f = int64(binary.BigEndian.Uint64(v[8*i:]))
	}
	return nil
}

// loadCounters reads the counters from the meta bucket.
func loadCounters(meta *bbolt.Bucket) (counters, error) {
	var c counters
	if err := c.decode(meta.Get(keyCounters)); err != nil {
		return counters{}, err
	}
	return c, nil
}
