package mcpserver_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/mcpserver"
)

// TestRateLimitsSpareLocalCallers: the rate limits apply to authenticated
// identities; a caller without a credential (the local user) is limited
// only with RateLocal.
func TestRateLimitsSpareLocalCallers(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	rate := ratelimit.Limits{Calls: 0.5, CallBurst: 2, Bytes: -1}
	local := identity.Identity{Transport: "http", Subject: "127.0.0.1:4000", Full: true}
	for _, tc := range []struct {
		name      string
		id        identity.Identity
		rateLocal bool
		limited   bool
	}{
		{"local", local, false, false},
		{"local with RateLocal", local, true, true},
		{"authenticated", agent(t, "a", "guide:/:rw"), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnforced(t, &mcpserver.Options{Rate: rate, Settings: mcpserver.Settings{MountPoint: testMount, Now: clock, RateLocal: tc.rateLocal}}, nil, nil)
			e.as(tc.id)
			refused := 0
			for i := range 10 {
				env := e.call("guide_cache_file", m{"path": fmt.Sprintf("/r/%d", i), "content": "x"})
				if !env.Success {
					if env.Error.Type != "rate_limited" {
						t.Fatalf("call %d: %+v", i, env.Error)
					}
					refused++
				}
			}
			if limited := refused > 0; limited != tc.limited || tc.limited && refused != 8 {
				t.Errorf("%d of 10 calls refused; want limited=%v (8 refused beyond the burst of 2)", refused, tc.limited)
			}
		})
	}
}
