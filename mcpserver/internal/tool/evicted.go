package tool

import (
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/store"
)

// shownEvictions keeps, of the paths a write evicted, those the caller may
// read; the others are counted in Count without their names. A write that
// fills the store evicts other identities' files, and their names are not
// the writer's to learn.
func (g *Store) shownEvictions(ev *store.Evictions) {
	if len(ev.Paths) == 0 {
		return
	}
	kept := ev.Paths[:0:0]
	for _, p := range ev.Paths {
		if _, err := g.c.perms.Check(g.c.def.name, g.c.def.group, p, grant.Read); err == nil {
			kept = append(kept, p)
		}
	}
	ev.Paths = kept
}
