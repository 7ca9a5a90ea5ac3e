package main

import (
	"strings"

	"github.com/depotfs/depotfs/internal/grant"
)

// grantsFlag is a repeatable flag of grants, each TOOL:PREFIX:ACCESS; one
// value may also hold several separated by commas (so a prefix containing
// a comma cannot be given this way). set records whether the flag was
// given at all, since an empty list (grants nothing) differs from none.
type grantsFlag struct {
	grants []grant.Grant
	set    bool
}

func (g *grantsFlag) String() string {
	s := make([]string, len(g.grants))
	for i, x := range g.grants {
		s[i] = x.String()
	}
	return strings.Join(s, ",")
}

func (g *grantsFlag) Set(v string) error {
	g.set = true
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		x, err := grant.Parse(part)
		if err != nil {
			return err
		}
		g.grants = append(g.grants, x)
	}
	return nil
}
