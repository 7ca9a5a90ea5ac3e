package main

import (
	"fmt"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// quotaFlag is serve's --quota: PREFIX=SIZE, repeatable, or several
// separated by commas (as the environment gives them).
type quotaFlag []store.Quota

func (q *quotaFlag) String() string {
	s := make([]string, len(*q))
	for i, x := range *q {
		b := byteSize(x.Bytes)
		s[i] = x.Prefix + "=" + b.String()
	}
	return strings.Join(s, ",")
}

func (q *quotaFlag) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		prefix, size, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("%q: want PREFIX=SIZE, such as /projects/a=10GiB", part)
		}
		clean, err := depotpath.Clean(prefix)
		if err != nil {
			return fmt.Errorf("%q: %w", part, err)
		}
		n, err := parseSize(size)
		if err != nil {
			return fmt.Errorf("%q: %w", part, err)
		}
		if n < 1 {
			return fmt.Errorf("%q: a quota of 0 bytes would refuse every write below %s; leave the prefix out to set none", part, clean)
		}
		for _, x := range *q {
			if x.Prefix == clean {
				return fmt.Errorf("%q: %s has a quota already", part, clean)
			}
		}
		*q = append(*q, store.Quota{Prefix: clean, Bytes: n})
	}
	return nil
}
