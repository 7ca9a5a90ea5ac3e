package tool

import (
	"context"
	"errors"
	"strings"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/store"
)

// Kept returns the revisions of p's kept versions, newest first, for a
// refusal that names them; none when p has no history. Every profile's
// answer to a version that is not kept lists them, so the agent can pick
// one instead of guessing.
func (g *Store) Kept(ctx context.Context, p string) ([]uint64, error) {
	versions, err := g.History(ctx, p)
	if err != nil && !errors.Is(err, store.ErrNotExist) {
		return nil, err
	}
	revs := make([]uint64, len(versions))
	for i, e := range versions {
		revs[i] = e.Revision
	}
	return revs, nil
}

// maxNearbyDrop is how many leading names Nearby drops at most: a mount
// point is rarely deeper than "/home/user/mnt".
const maxNearbyDrop = 3

// Nearby returns the depot path that p, a path with no entry, probably
// meant, or "" when there is none: p without its first one to three names,
// when that path exists and the caller may read it. An agent that saw the
// depot mounted on another host sends "/mnt/depot/a/b" for "/a/b". The
// probes are not recorded among the call's paths: the call did not ask
// for them, and a path the caller may not read is never probed.
func (g *Store) Nearby(ctx context.Context, p string) string {
	rest := strings.TrimPrefix(p, "/")
	for range maxNearbyDrop {
		_, after, ok := strings.Cut(rest, "/")
		if !ok {
			return ""
		}
		rest = after
		cand := "/" + rest
		if _, err := g.c.perms.Check(g.c.def.name, g.c.def.group, cand, grant.Read); err != nil {
			continue
		}
		if _, err := g.rt.st.Stat(ctx, cand); err == nil {
			return cand
		}
	}
	return ""
}
