package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultChunkGrace is Options.ChunkGrace's default.
const DefaultChunkGrace = time.Hour

// SweepChunks deletes the chunks no record of the tree references (no
// blob, no upload, no dropped content awaiting deletion) whose newest
// message the servers stored before olderThan, and returns how many chunk
// messages it deleted. Such chunks are left by a host that crashed
// between uploading content and committing the change that references it,
// or between storing an upload's chunk and recording it. A group of
// chunks that is still being written (an upload or a stream in flight on
// any host) has a recent newest message, so olderThan must lie further in
// the past than the longest time between a host's chunk write and its
// commit: every host's sweeper passes now minus Options.ChunkGrace. The
// deleted count (what the servers report purging, so two hosts sweeping
// at once count each chunk once) is added to the store's cumulative
// counters (Stats' SweptChunks). It is safe for concurrent use, also from
// several hosts.
//
// The sweep lists every chunk subject of the stream, so its cost grows
// with the content stored; the sweeper runs it every ChunkGrace/4 (at
// least a minute, at most 15).
func (s *Store) SweepChunks(ctx context.Context, olderThan time.Time) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	prefix := s.chunks.name + "."
	info, err := s.chunks.stream.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return 0, fmt.Errorf("nats: sweep chunks: listing the chunk stream: %w", err)
	}
	groups := map[string]bool{} // first two subject tokens after the prefix
	for subj := range info.State.Subjects {
		if g, ok := chunkGroup(strings.TrimPrefix(subj, prefix)); ok {
			groups[g] = true
		}
	}
	// Every commit made before the listing is applied here after Sync:
	// chunks it references are not taken for leaked.
	if err := s.Sync(ctx); err != nil {
		return 0, fmt.Errorf("nats: sweep chunks: %w", err)
	}
	live := s.liveChunkGroups()
	swept := 0
	for g := range groups {
		if live[g] {
			continue
		}
		m, err := s.chunks.stream.GetLastMsgForSubject(ctx, prefix+g+".>")
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // deleted meanwhile (an upload dropped, a collection)
		}
		if err != nil {
			return swept, fmt.Errorf("nats: sweep chunks: newest chunk of %s: %w", g, err)
		}
		// A commit that landed since is seen again; by the grace's
		// assumption there is none.
		if !m.Time.Before(olderThan) || s.liveChunkGroups()[g] {
			continue
		}
		purged, err := s.purgeCounted(ctx, prefix+g+".>")
		if err != nil {
			return swept, fmt.Errorf("nats: sweep chunks: %w", err)
		}
		if purged > 0 {
			s.log.Warn("nats: deleted leaked chunks", "chunks", prefix+g+".>", "count", purged, "newest", m.Time)
		}
		swept += purged
	}
	if swept == 0 {
		return 0, nil
	}
	err = s.update(ctx, func(t *txn) error {
		t.c.SweptChunks += int64(swept)
		return nil
	}, nil)
	return swept, err
}

// chunkGroup returns the group of a chunk subject (without the stream's
// prefix): its first two tokens, which name one content generation
// ("<sha256>.<gen>"), one streamed content ("s.<id>") or one upload
// ("u.<hash>").
func chunkGroup(rest string) (string, bool) {
	i := strings.IndexByte(rest, '.')
	if i <= 0 {
		return "", false
	}
	j := strings.IndexByte(rest[i+1:], '.')
	if j <= 0 {
		return "", false
	}
	return rest[:i+1+j], true
}

// liveChunkGroups returns the chunk groups the records of this host's
// state reference: content generations of blobs and of dropped content
// awaiting deletion, and uploads.
func (s *Store) liveChunkGroups() map[string]bool {
	prefix := s.chunks.name + "."
	live := map[string]bool{}
	add := func(id, gen string) {
		if gen != genInline {
			live[strings.TrimPrefix(s.chunks.blobPrefix(id, gen), prefix)] = true
		}
	}
	// Blobs' ids are computed after the state is released: in a depot
	// with keyed addresses each is an HMAC, and a million of them would
	// hold off every write for a second.
	type gen struct{ sum, gen string }
	var blobs []gen
	s.view.mu.RLock()
	if s.chunks.addr.keyed() {
		blobs = make([]gen, 0, len(s.view.st.blobs))
	}
	for sum, b := range s.view.st.blobs {
		if blobs != nil {
			blobs = append(blobs, gen{sum, b.Gen})
		} else {
			add(sum, b.Gen)
		}
	}
	for k := range s.view.st.gcs {
		add(gcParts(k))
	}
	for k := range s.view.st.uploads {
		live[k] = true
	}
	s.view.mu.RUnlock()
	for _, b := range blobs {
		add(s.chunks.addr.id(b.sum), b.gen)
	}
	return live
}

// purgeCounted deletes the chunks matching filter and returns how many
// messages the servers purged. jetstream's Stream.Purge drops that count;
// the request is the same JetStream API call.
func (s *Store) purgeCounted(ctx context.Context, filter string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := json.Marshal(jetstream.StreamPurgeRequest{Subject: filter})
	if err != nil {
		return 0, err
	}
	msg, err := s.nc.RequestWithContext(ctx, jetstream.DefaultAPIPrefix+"STREAM.PURGE."+s.chunks.name, req)
	if err != nil {
		return 0, fmt.Errorf("deleting chunks %s: %w", filter, err)
	}
	var resp struct {
		Success bool                `json:"success"`
		Purged  uint64              `json:"purged"`
		Error   *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return 0, fmt.Errorf("deleting chunks %s: reply: %w", filter, err)
	}
	if resp.Error != nil {
		return 0, fmt.Errorf("deleting chunks %s: %w", filter, resp.Error)
	}
	return int(resp.Purged), nil
}
