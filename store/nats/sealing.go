package nats

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/nats-io/nats.go"
)

// keySeal is the tree bucket key of a sealed depot's seal.Record: its data
// key, wrapped, and the id of the key that wraps it. Hosts of older
// builds ignore m.* keys they do not know; a depot without it keeps its
// content in the clear.
const keySeal = "m.seal"

// sealData returns what to store of content bytes b whose place is ad (a
// chunk's subject, or the tree key of inline content): b itself in a
// clear depot, else b sealed and bound to ad.
func (c *chunkStore) sealData(ad string, b []byte) []byte {
	if c.key == nil {
		return b
	}
	return c.key.Seal(make([]byte, 0, len(b)+seal.Overhead), b, []byte(ad))
}

// openData returns the content bytes stored as b at ad: b itself in a
// clear depot; sealed bytes that fail authentication are an error
// wrapping store.ErrCorrupt and seal.ErrTampered, never bytes.
func (c *chunkStore) openData(ad string, b []byte) ([]byte, error) {
	if c.key == nil {
		return b, nil
	}
	p, err := c.key.Open(make([]byte, 0, max(0, len(b)-seal.Overhead)), b, []byte(ad))
	if err != nil {
		c.tampered.Failed(ad, err)
		return nil, fmt.Errorf("%s: %w: %w", ad, store.ErrCorrupt, err)
	}
	return p, nil
}

// readSeal reads the depot's seal record before this host reads the tree,
// whose records name content by keyed addresses if the record says so,
// and unwraps its data key with Options.Key (see openSeal): sealed
// reports that there is a record. Open reads it once more (unseal) when
// there was none.
func (s *Store) readSeal(ctx context.Context) (sealed bool, err error) {
	data, err := lastMsg(ctx, s.nc, s.tree, s.subject(keySeal), s.opts.Timeout)
	switch {
	case errors.Is(err, errChunkMissing):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the depot's seal record: %w", err)
	}
	return true, s.openSeal(ctx, data, false)
}

// unseal settles, once this host has read the tree, the sealing of a depot
// that had no seal record when readSeal looked. A host with a key seals a
// depot this Open created, with keyed addresses (of hosts creating it at
// once, the first record wins, and the others must hold its key); it
// refuses one that exists without a record, whose content may be in the
// clear. A record another host wrote meanwhile is opened as readSeal
// would.
func (s *Store) unseal(ctx context.Context, created bool) error {
	kek := s.opts.Key
	data, err := lastMsg(ctx, s.nc, s.tree, s.subject(keySeal), s.opts.Timeout)
	switch {
	case errors.Is(err, errChunkMissing) && kek == nil:
		return nil
	case errors.Is(err, errChunkMissing) && !created:
		return fmt.Errorf("%w: the depot under prefix %q was created without a key and its content may be in the clear; start this host without --key-file and DEPOTFS_KEY", seal.ErrNotSealed, s.opts.Prefix)
	case errors.Is(err, errChunkMissing):
		newRecord := seal.NewKeyedRecord
		if s.opts.plainAddresses {
			newRecord = seal.NewRecord
		}
		k, r, err := newRecord(ctx, kek)
		if err != nil {
			return err
		}
		if err := s.recordSeal(ctx, r); err != nil {
			return err
		}
		if data, err = lastMsg(ctx, s.nc, s.tree, s.subject(keySeal), s.opts.Timeout); err != nil {
			return fmt.Errorf("reading the depot's seal record: %w", err)
		}
		if r2, err := seal.ParseRecord(data); err == nil && r2.ID == r.ID {
			s.log.Info("nats: new depot sealed", "prefix", s.opts.Prefix, "data_key", r.ID, "key", r.KEKID, "keyed_addresses", k.Keyed())
			return s.useKey(k, true)
		}
	case err != nil:
		return fmt.Errorf("reading the depot's seal record: %w", err)
	}
	return s.openSeal(ctx, data, true)
}

// openSeal unwraps the data key of the seal record data with Options.Key
// and uses it (late as useKey says), so every host of a sealed depot must
// hold the key that wraps it: a host without a key, or with another, is
// refused naming the key id the depot wants.
func (s *Store) openSeal(ctx context.Context, data []byte, late bool) error {
	r, err := seal.ParseRecord(data)
	if err != nil {
		return err
	}
	if s.opts.Key == nil {
		return fmt.Errorf("%w: its data key %s is wrapped by key %s: give every host that key (--key-file or DEPOTFS_KEY)", seal.ErrNoKey, r.ID, r.KEKID)
	}
	k, err := seal.Open(ctx, s.opts.Key, r)
	if err != nil {
		return fmt.Errorf("every host of a depot needs the key that wraps its data key: %w", err)
	}
	return s.useKey(k, late)
}

// errSealedMeanwhile reports a depot that another host sealed, with keyed
// addresses, while this host read its records without the key: it must
// read them again.
var errSealedMeanwhile = errors.New("another host sealed the depot while this host read it; open it again")

// useKey makes k the depot's data key on this host. A key for keyed
// addresses that comes late, after the tree was read (another host
// sealed the new depot meanwhile), is refused with errSealedMeanwhile if
// the state read holds content already, named by addresses it took for
// hashes.
func (s *Store) useKey(k *seal.Key, late bool) error {
	s.chunks.key, s.chunks.tampered = k, seal.NewTally(s.log)
	if !k.Keyed() {
		return nil
	}
	s.view.mu.Lock()
	defer s.view.mu.Unlock()
	st := s.view.st
	if late && len(st.blobs)+len(st.gcs)+len(st.entries)+len(st.uploads)+len(st.vkeys) > 0 {
		return errSealedMeanwhile
	}
	s.chunks.addr = addresses{k}
	st.addr = s.chunks.addr
	return nil
}

// TamperedChunks is how many times sealed content failed to open on this
// host since the store was opened (a damaged or altered chunk, read again
// counts again): depotfs_store_tampered_chunks_total.
func (s *Store) TamperedChunks() uint64 {
	if s.chunks.tampered == nil {
		return 0
	}
	return s.chunks.tampered.Count()
}

// recordSeal records r unless a seal record exists already.
func (s *Store) recordSeal(ctx context.Context, r seal.Record) error {
	m := nats.NewMsg(s.subject(keySeal))
	m.Data = r.Marshal()
	m.Header.Set("Nats-Expected-Last-Subject-Sequence", "0")
	return retry(ctx, func() error {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		resp, err := s.nc.RequestMsgWithContext(rctx, m)
		if err != nil {
			return fmt.Errorf("recording the depot's seal record: %w", err)
		}
		var ack pubAck
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return fmt.Errorf("recording the depot's seal record: unreadable acknowledgement %q: %w", resp.Data, err)
		}
		if e := ack.Error; e != nil && e.ErrCode != errCodeWrongLastSeq {
			return fmt.Errorf("recording the depot's seal record: %s (code %d)", e.Description, e.ErrCode)
		}
		return nil
	})
}

// ErrSealChanged reports a rotation that found the depot's seal record
// replaced between reading and rewriting it: another rotation ran at the
// same moment. Nothing was written; run it again.
var ErrSealChanged = errors.New("the depot's seal record changed during the rotation")

// Rekey rewraps the data key of the sealed depot under prefix, on the
// cluster nc reaches, from cur to next and returns the new record: the
// rotation of the key-encryption key, one record whatever the depot holds,
// without opening the depot. The record is replaced only if it is still
// the one read (its subject's sequence, compared by the server), so of two
// rotations at once one fails with ErrSealChanged. Hosts already running
// keep the data key they unwrapped at start and go on; a host that starts
// afterwards needs next. A depot created without a key fails with
// seal.ErrNotSealed, a cur other than its key with seal.ErrWrongKey, a
// prefix the cluster holds no depot under with ErrNoDepot; none of them
// writes anything. Transient errors are retried until ctx is done.
func Rekey(ctx context.Context, nc *nats.Conn, prefix string, cur, next seal.Wrapper) (seal.Record, error) {
	prefix = cmp.Or(prefix, DefaultPrefix)
	stream, subject := "KV_"+prefix+"-tree", "$KV."+prefix+"-tree."+keySeal
	var (
		data []byte
		seq  uint64
	)
	err := retry(ctx, func() (err error) {
		data, seq, err = lastWithSeq(ctx, nc, stream, subject)
		return err
	})
	switch {
	case errors.Is(err, errChunkMissing):
		return seal.Record{}, fmt.Errorf("nats: rekey %s: %w", prefix, seal.ErrNotSealed)
	case err != nil:
		return seal.Record{}, fmt.Errorf("nats: rekey %s: %w", prefix, err)
	}
	old, err := seal.ParseRecord(data)
	if err != nil {
		return seal.Record{}, fmt.Errorf("nats: rekey %s: %w", prefix, err)
	}
	r, err := seal.Rewrap(ctx, old, cur, next)
	if err != nil {
		return seal.Record{}, fmt.Errorf("nats: rekey %s: %w", prefix, err)
	}
	m := nats.NewMsg(subject)
	m.Data = r.Marshal()
	m.Header.Set("Nats-Expected-Last-Subject-Sequence", strconv.FormatUint(seq, 10))
	err = retry(ctx, func() error {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		resp, err := nc.RequestMsgWithContext(rctx, m)
		if err != nil {
			return err
		}
		var ack pubAck
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return fmt.Errorf("unreadable acknowledgement %q: %w", resp.Data, err)
		}
		if e := ack.Error; e != nil {
			if e.ErrCode == errCodeWrongLastSeq || e.ErrCode == errCodeWrongLastSeqConstant {
				return ErrSealChanged
			}
			return fmt.Errorf("%s (code %d)", e.Description, e.ErrCode)
		}
		return nil
	})
	if err != nil {
		// A write whose answer was lost, or a retry of one that was
		// stored, may have rotated the key all the same: the record
		// tells.
		if now, _, rerr := lastWithSeq(ctx, nc, stream, subject); rerr == nil && bytes.Equal(now, m.Data) {
			return r, nil
		}
		return seal.Record{}, fmt.Errorf("nats: rekey %s: writing the seal record: %w", prefix, err)
	}
	return r, nil
}

// lastWithSeq asks stream's leader for the last message on subject and its
// sequence: errChunkMissing when there is none, ErrNoDepot when there is
// no such stream. The leader, not any replica, so that the sequence is the
// one a compare-and-set will be checked against.
func lastWithSeq(ctx context.Context, nc *nats.Conn, stream, subject string) ([]byte, uint64, error) {
	req, err := json.Marshal(map[string]any{"last_by_subj": subject})
	if err != nil {
		return nil, 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := nc.RequestWithContext(rctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, 0, fmt.Errorf("asking the leader of %s: %w", stream, err)
	}
	var r msgGetResponse
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return nil, 0, fmt.Errorf("asking the leader of %s: unreadable answer: %w", stream, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrCode == errCodeNoMessage:
		return nil, 0, fmt.Errorf("%s: %w", subject, errChunkMissing)
	case r.Error != nil && r.Error.ErrCode == errCodeStreamNotFound:
		return nil, 0, ErrNoDepot
	case r.Error != nil:
		return nil, 0, fmt.Errorf("asking the leader of %s: %s (code %d)", stream, r.Error.Description, r.Error.ErrCode)
	case r.Message == nil:
		return nil, 0, fmt.Errorf("asking the leader of %s: an answer without a message", stream)
	}
	return r.Message.Data, r.Message.Seq, nil
}

// errCodeStreamNotFound is the JetStream error code of a request to a
// stream that does not exist.
const errCodeStreamNotFound = 10059
