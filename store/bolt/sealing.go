package bolt

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	lru "github.com/hashicorp/golang-lru/v2"
	bbolt "go.etcd.io/bbolt"
)

// keySeal is the meta key of a sealed store's seal.Record: its data key,
// wrapped, and the id of the key that wraps it. A store without it keeps
// its content in the clear.
var keySeal = []byte("seal")

// Associated data prefixes: a blob chunk is bound to its chunks-bucket
// key (the content's hash and the chunk's index), an upload's chunk to the
// upload's id and its index, so no sealed chunk opens anywhere else.
const (
	adBlob   = "depotfs blob chunk\x00"
	adUpload = "depotfs upload chunk\x00"
	// In a keyed store, an upload's metadata is bound to the upload's id,
	// a logged change to its revision.
	adUploadMeta = "depotfs upload record\x00"
	adChange     = "depotfs change\x00"
)

// openedChunks is how many opened blob chunks a sealed store keeps in
// memory, so that a reader going through a chunk in pieces (the kernel
// reads 128 KiB at a time) opens it once: 32 MiB at the default chunk
// size, the one place besides the page cache where plaintext stays.
const openedChunks = 32

// sealer seals the chunks of a store opened with a key; with a nil key it
// stores and returns them as they are.
type sealer struct {
	key    *seal.Key
	opened *lru.Cache[openedKey, []byte] // nil without a key
	// st is what the copies of the store's sealer share and what changes
	// while it runs; nil in SealFile's, which only seals.
	st *sealState
}

// sealState is the changing part of a Store's sealer.
type sealState struct {
	// prev is the data key content is being resealed from (Reencrypt),
	// still accepted until the resealer has rewritten every chunk under
	// key; nil when no reencryption is in progress.
	prev atomic.Pointer[seal.Key]
	// retired is prev once the resealer has finished: a read transaction
	// that began before its last commit still sees chunks sealed under it,
	// so it keeps opening them until the store closes (the file no longer
	// holds it).
	retired atomic.Pointer[seal.Key]
	// tampered counts the chunks that failed to open and logs each once.
	tampered *seal.Tally
}

// openedKey names an opened blob chunk; the chunk size is part of it since
// a blob deleted and written again by a store with another chunk size
// has other chunks under the same hash.
type openedKey struct {
	h         hash
	chunkSize int64
	i         int64
}

// loadSeal reads the store's seal record and unwraps its data key with
// kek (Options.Key) at Open: a sealed store needs its key, and a key is
// refused for a store whose content is in the clear, unless it holds no
// content yet (a new store), which a writable tx then seals.
func (s *Store) loadSeal(tx *bbolt.Tx, kek seal.Wrapper) error {
	rec := tx.Bucket(bucketMeta).Get(keySeal)
	if tx.Bucket(bucketMeta).Get(keySealing) != nil {
		return ErrSealing
	}
	s.sealer.st = &sealState{tampered: seal.NewTally(s.log)}
	switch {
	case rec == nil && kek == nil:
		return nil
	case rec == nil:
		if !tx.Writable() || !empty(tx, bucketBlobs, bucketChunks, bucketUploads) {
			return fmt.Errorf("%w: its content was written without a key and is in the clear; open it without --key-file and DEPOTFS_KEY or seal it first, offline, with 'depotfs seal'", seal.ErrNotSealed)
		}
		k, r, err := seal.NewKeyedRecord(context.Background(), kek)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketMeta).Put(keySeal, r.Marshal()); err != nil {
			return err
		}
		s.log.Info("new depot sealed", "data_key", r.ID, "key", r.KEKID)
		return s.sealWith(k)
	}
	r, err := seal.ParseRecord(rec)
	if err != nil {
		return err
	}
	if kek == nil {
		return fmt.Errorf("%w: its data key %s is wrapped by key %s: give that key (--key-file or DEPOTFS_KEY)", seal.ErrNoKey, r.ID, r.KEKID)
	}
	k, err := seal.Open(context.Background(), kek, r)
	if err != nil {
		return err
	}
	if tx.Bucket(bucketMeta).Get(keyResealing) != nil {
		pr, err := seal.ParseRecord(tx.Bucket(bucketMeta).Get(keySealPrev))
		if err != nil {
			return fmt.Errorf("reencryption in progress: previous data key: %w", err)
		}
		pk, err := seal.Open(context.Background(), kek, pr)
		if err != nil {
			return fmt.Errorf("reencryption in progress: previous data key: %w", err)
		}
		s.sealer.st.prev.Store(pk)
	}
	return s.sealWith(k)
}

// sealWith makes k the store's data key.
func (s *Store) sealWith(k *seal.Key) error {
	c, err := lru.New[openedKey, []byte](openedChunks)
	if err != nil {
		return err
	}
	s.sealer.key, s.sealer.opened = k, c
	return nil
}

// empty reports whether every named bucket is empty.
func empty(tx *bbolt.Tx, names ...[]byte) bool {
	for _, n := range names {
		if k, _ := tx.Bucket(n).Cursor().First(); k != nil {
			return false
		}
	}
	return true
}

// seal returns what to store of chunk v under key k: v itself without a
// key, else its sealed form bound to prefix and k.
func (c sealer) seal(prefix string, k, v []byte) []byte {
	if c.key == nil {
		return v
	}
	return c.key.Seal(make([]byte, 0, len(v)+seal.Overhead), v, ad(prefix, k))
}

// overhead is how many bytes sealing adds to a chunk: none without a key.
func (c sealer) overhead() int {
	if c.key == nil {
		return 0
	}
	return seal.Overhead
}

// sealBlob returns what a sealed store stores as chunk i of blob h: data
// sealed into dst's array (a new one when dst is too small).
func (c sealer) sealBlob(dst []byte, h hash, i int64, data []byte) []byte {
	return c.key.Seal(dst[:0], data, ad(adBlob, chunkKey(h, i)))
}

// open returns the plaintext of chunk v stored under key k (v itself
// without a key); a chunk that fails authentication is an error wrapping
// store.ErrCorrupt and seal.ErrTampered, never bytes (the mount answers
// EIO, a tool says the content must be restored), counted and logged once.
func (c sealer) open(prefix string, k, v []byte) ([]byte, error) {
	p, _, err := c.openAny(nil, prefix, k, v)
	return p, err
}

// openAny is open into dst's array (a new one when dst is too small), and
// tells whether the chunk is sealed under the current data key (false:
// under the one a reencryption is moving away from).
func (c sealer) openAny(dst []byte, prefix string, k, v []byte) ([]byte, bool, error) {
	if c.key == nil {
		return v, true, nil
	}
	buf := dst[:0]
	if n := len(v) - seal.Overhead; cap(buf) < n {
		buf = make([]byte, 0, max(0, n))
	}
	p, err := c.key.Open(buf, v, ad(prefix, k))
	if err == nil {
		return p, true, nil
	}
	if c.st == nil {
		return nil, false, fmt.Errorf("chunk %x: %w: %w", k, store.ErrCorrupt, err)
	}
	// A failed open costs one Poly1305 pass, not a decryption: trying the
	// previous key after the current one is cheap, and only happens while
	// a reencryption runs.
	for _, prev := range []*seal.Key{c.st.prev.Load(), c.st.retired.Load()} {
		if prev == nil {
			continue
		}
		if p, perr := prev.Open(buf, v, ad(prefix, k)); perr == nil {
			return p, false, nil
		}
	}
	c.st.tampered.Failed(fmt.Sprintf("%s %x", strings.TrimSuffix(prefix, "\x00"), k), err)
	return nil, false, fmt.Errorf("chunk %x: %w: %w", k, store.ErrCorrupt, err)
}

// TamperedChunks is how many times a sealed chunk failed to open since the
// store was opened (a damaged or altered chunk, read again counts again):
// depotfs_store_tampered_chunks_total.
func (s *Store) TamperedChunks() uint64 {
	if s.sealer.st == nil {
		return 0
	}
	return s.sealer.st.tampered.Count()
}

// keyed reports whether the store names content by its keyed address
// (seal.Key.Keyed): then the plain SHA-256 of content appears nowhere in
// the file in the clear. A clear store and a store sealed before keyed
// addresses existed name it by the plain hash.
func (c sealer) keyed() bool { return c.key != nil && c.key.Keyed() }

// address is what the store names the content whose plain SHA-256 is h
// by, in the blobs, chunks, refs, orphans and lru buckets: its keyed
// address in a keyed store, else h. Agents only ever see and send h; it
// is mapped here, at the store's edge.
func (c sealer) address(h hash) hash {
	if !c.keyed() {
		return h
	}
	return c.key.Address(h)
}

// blobKey is the address of the content whose plain SHA-256 is sum, in
// hex.
func (c sealer) blobKey(sum string) (hash, error) {
	h, err := parseHash(sum)
	return c.address(h), err
}

// sealSum returns what a record keeps of a plain SHA-256: enciphered in a
// keyed store (seal.Key.SealSum), else h itself.
func (c sealer) sealSum(h hash) hash {
	if !c.keyed() {
		return h
	}
	return c.key.SealSum(h)
}

// openSum is the inverse of sealSum.
func (c sealer) openSum(h hash) hash {
	if !c.keyed() {
		return h
	}
	return c.key.OpenSum(h)
}

// sealValue returns what to store of a record v (an upload's metadata,
// a logged change) under key k: in a keyed store sealed under the record
// key (seal.Key.SealRecord), which a reencryption keeps, since it names
// content by its plain SHA-256; else v itself.
func (c sealer) sealValue(prefix string, k, v []byte) []byte {
	if !c.keyed() {
		return v
	}
	return c.key.SealRecord(make([]byte, 0, len(v)+seal.Overhead), v, ad(prefix, k))
}

// openValue is the inverse of sealValue; a record that fails to open is
// counted and logged as a tampered chunk is.
func (c sealer) openValue(prefix string, k, v []byte) ([]byte, error) {
	if !c.keyed() {
		return v, nil
	}
	p, err := c.key.OpenRecord(make([]byte, 0, max(0, len(v)-seal.Overhead)), v, ad(prefix, k))
	if err != nil {
		if c.st != nil {
			c.st.tampered.Failed(fmt.Sprintf("%s %x", strings.TrimSuffix(prefix, "\x00"), k), err)
		}
		return nil, fmt.Errorf("corrupt store: record %x: %w", k, err)
	}
	return p, nil
}

// ad is the associated data of the chunk under key k.
func ad(prefix string, k []byte) []byte { return append([]byte(prefix), k...) }

// putBlobChunk stores data as chunk i of blob h, sealed if the store is.
func (w *wtx) putBlobChunk(h hash, i int64, data []byte) error {
	k := chunkKey(h, i)
	return w.chunks.Put(k, w.s.sealer.seal(adBlob, k, data))
}

// blobChunk returns chunk i of blob h (of chunkSize-byte chunks) from
// chunks, opened; nil when absent. Opened chunks of a sealed store are
// kept (see openedChunks).
func (c sealer) blobChunk(chunks *bbolt.Bucket, h hash, chunkSize, i int64) ([]byte, error) {
	k := chunkKey(h, i)
	if c.key == nil {
		return chunks.Get(k), nil
	}
	ok := openedKey{h, chunkSize, i}
	if p, hit := c.opened.Get(ok); hit {
		return p, nil
	}
	v, found := lookup(chunks, k)
	if !found {
		return nil, nil
	}
	p, err := c.open(adBlob, k, v)
	if err != nil {
		return nil, err
	}
	c.opened.Add(ok, p)
	return p, nil
}

// uploadChunkAD is the associated data key of chunk i of upload id.
func uploadChunkAD(id string, i int) []byte {
	return append([]byte(id+"\x00"), chunkDataKey(i)...)
}

// uploadChunk returns chunk i of upload id from its bucket ub, opened, and
// whether it is there.
func (c sealer) uploadChunk(ub *bbolt.Bucket, id string, i int) ([]byte, bool, error) {
	v, ok := lookup(ub, chunkDataKey(i))
	if !ok {
		return nil, false, nil
	}
	p, err := c.open(adUpload, uploadChunkAD(id, i), v)
	return p, err == nil, err
}

// putUploadChunk stores data as chunk i of upload id in its bucket ub.
func (c sealer) putUploadChunk(ub *bbolt.Bucket, id string, i int, data []byte) error {
	return ub.Put(chunkDataKey(i), c.seal(adUpload, uploadChunkAD(id, i), data))
}

// Rekey rewraps the data key of the sealed store at path, which no process
// may have open, from cur to next, and returns the new record: the
// rotation of the key-encryption key, one write whatever the store holds.
// The content stays sealed under the same data key. A clear store fails
// with seal.ErrNotSealed, a cur other than its key with seal.ErrWrongKey;
// either way the file is unchanged.
func Rekey(ctx context.Context, path string, cur, next seal.Wrapper) (seal.Record, error) {
	if _, err := os.Stat(path); err != nil {
		return seal.Record{}, fmt.Errorf("bolt: rekey: %w", err)
	}
	db, lock, err := openLocked(path, &bbolt.Options{Timeout: lockTimeout})
	if err != nil {
		return seal.Record{}, fmt.Errorf("bolt: rekey: %w", err)
	}
	defer lock.Close()
	var r seal.Record
	err = db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return ErrNotDepot
		}
		v := meta.Get(keySeal)
		if v == nil {
			return seal.ErrNotSealed
		}
		old, err := seal.ParseRecord(v)
		if err != nil {
			return err
		}
		if r, err = seal.Rewrap(ctx, old, cur, next); err != nil {
			return err
		}
		return meta.Put(keySeal, r.Marshal())
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return seal.Record{}, fmt.Errorf("bolt: rekey %s: %w", path, err)
	}
	return r, nil
}
