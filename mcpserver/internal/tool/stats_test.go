package tool

import (
	"fmt"
	"testing"
	"time"
)

// TestStatsBounded: counts of more identities than maxStatsKeys drop the
// ones updated least recently.
func TestStatsBounded(t *testing.T) {
	var st identityStats
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range maxStatsKeys + 10 {
		st.update(fmt.Sprintf("k%d", i), func(s *IdentityStats) { s.Calls++; s.Last = t0.Add(time.Duration(i) * time.Second) })
		if i == maxStatsKeys/2 {
			// k0 stays in use: it must survive the flood.
			st.update("k0", func(s *IdentityStats) { s.Last = t0.Add(time.Hour * 24 * 365) })
		}
	}
	if n := st.ids.Len(); n != maxStatsKeys {
		t.Fatalf("%d identities kept, want %d", n, maxStatsKeys)
	}
	for _, gone := range []string{"k1", "k10"} {
		if st.ids.Contains(gone) {
			t.Errorf("%s, among the least recently seen, is still kept", gone)
		}
	}
	if !st.ids.Contains("k0") {
		t.Errorf("the recently seen k0 was dropped")
	}
}
