package rules

import "github.com/depotfs/depotfs/internal/depotpath"

// Touched is the set of directories whose times a transaction moves when
// it ends (Txn.TouchDir): a store's transaction embeds it for TouchDir
// and UntouchWithin and writes the times at its end.
type Touched map[string]bool

// TouchDir notes that the directory holding p changed.
func (d *Touched) TouchDir(p string) {
	dir, _ := depotpath.Split(p)
	if *d == nil {
		*d = Touched{}
	}
	(*d)[dir] = true
}

// UntouchWithin forgets the touches of dir and the directories below it.
func (d Touched) UntouchWithin(dir string) {
	for t := range d {
		if depotpath.Within(t, dir) {
			delete(d, t)
		}
	}
}
