package fetch

import (
	"context"
	"maps"
	"time"
)

// publisher keeps the Exchange in step with this broker's requests: after
// every local change it publishes what changed and withdraws what ended,
// and it refreshes everything every RefreshInterval. One goroutine does
// it, so the Exchange sees the changes in order.
func (b *Broker) publisher(ctx context.Context) {
	published := map[string]Request{}
	tick := time.NewTicker(RefreshInterval)
	defer tick.Stop()
	for {
		refresh := false
		select {
		case <-ctx.Done():
			b.withdrawAll(published)
			return
		case <-b.kick:
		case <-tick.C:
			refresh = true
		}
		b.mu.Lock()
		now := make(map[string]Request, len(b.reqs))
		for p, r := range b.reqs {
			now[p] = r.Request
		}
		b.mu.Unlock()
		for p, r := range now {
			if old, ok := published[p]; ok && !refresh && old.Waiters == r.Waiters && old.ID == r.ID {
				continue
			}
			if err := b.ex.Publish(ctx, r); err != nil {
				if ctx.Err() == nil {
					b.log.Warn("fetch: sharing a request with the other hosts failed", "path", p, "err", err)
				}
				continue
			}
			published[p] = r
		}
		for p := range published {
			if _, ok := now[p]; ok {
				continue
			}
			if err := b.ex.Withdraw(ctx, p); err != nil && ctx.Err() == nil {
				b.log.Warn("fetch: withdrawing a shared request failed", "path", p, "err", err)
				continue
			}
			delete(published, p)
		}
	}
}

// with is r with o's readers too: their waiters added, the earlier Since.
func (r Request) with(o Request) Request {
	r.Waiters += o.Waiters
	if o.Since.Before(r.Since) {
		r.Since = o.Since
	}
	return r
}

// withdrawAll withdraws what this broker still shares, at Close.
func (b *Broker) withdrawAll(published map[string]Request) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for p := range published {
		if err := b.ex.Withdraw(ctx, p); err != nil {
			b.log.Warn("fetch: withdrawing a shared request failed", "path", p, "err", err)
		}
	}
}

// follow merges the other hosts' requests into the broker's pending set.
func (b *Broker) follow(ctx context.Context) {
	err := b.ex.Watch(ctx, func(others []Request) {
		merged := map[string]Request{}
		for _, o := range others {
			if m, ok := merged[o.Path]; ok {
				o = m.with(o)
			}
			merged[o.Path] = o
		}
		b.mu.Lock()
		changed := len(merged) != len(b.remote)
		for p, m := range merged {
			if old, ok := b.remote[p]; !ok || old.Waiters != m.Waiters {
				changed = true
			}
			if _, ok := b.remoteIDs[p]; !ok {
				b.lastID++
				b.remoteIDs[p] = b.lastID
			}
		}
		for p := range b.remoteIDs {
			if _, ok := merged[p]; !ok {
				delete(b.remoteIDs, p)
			}
		}
		b.remote = maps.Clone(merged)
		if changed {
			b.changedLocked()
		}
		b.mu.Unlock()
		if changed {
			b.notify()
		}
	})
	if err != nil && ctx.Err() == nil {
		b.log.Warn("fetch: following the other hosts' requests stopped", "err", err)
	}
}
