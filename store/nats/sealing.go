package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// unseal reads the depot's seal record at Open and unwraps its data key
// with Options.Key, so every host of a sealed depot must hold the key that
// wraps it: a host without a key, or with another, is refused naming the
// key id the depot wants. A host with a key seals a depot this Open
// created (of hosts creating it at once, the first record wins, and the
// others must hold its key); it refuses one that exists without a record,
// whose content may be in the clear.
func (s *Store) unseal(ctx context.Context, created bool) error {
	kek := s.opts.Key
	data, err := lastMsg(ctx, s.nc, s.tree, s.subject(keySeal), s.opts.Timeout)
	switch {
	case errors.Is(err, errChunkMissing) && kek == nil:
		return nil
	case errors.Is(err, errChunkMissing) && !created:
		return fmt.Errorf("%w: the depot under prefix %q was created without a key and its content may be in the clear; start this host without --key-file and DEPOTFS_KEY", seal.ErrNotSealed, s.opts.Prefix)
	case errors.Is(err, errChunkMissing):
		k, r, err := seal.NewRecord(ctx, kek)
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
			s.log.Info("nats: new depot sealed", "prefix", s.opts.Prefix, "data_key", r.ID, "key", r.KEKID)
			s.chunks.key, s.chunks.tampered = k, seal.NewTally(s.log)
			return nil
		}
	case err != nil:
		return fmt.Errorf("reading the depot's seal record: %w", err)
	}
	r, err := seal.ParseRecord(data)
	if err != nil {
		return err
	}
	if kek == nil {
		return fmt.Errorf("%w: its data key %s is wrapped by key %s: give every host that key (--key-file or DEPOTFS_KEY)", seal.ErrNoKey, r.ID, r.KEKID)
	}
	k, err := seal.Open(ctx, kek, r)
	if err != nil {
		return fmt.Errorf("every host of a depot needs the key that wraps its data key: %w", err)
	}
	s.chunks.key, s.chunks.tampered = k, seal.NewTally(s.log)
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
