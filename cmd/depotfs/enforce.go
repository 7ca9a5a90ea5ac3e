package main

import (
	"cmp"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/mcpserver"
)

// enforceConfig is the server's own policy, its audit log and its rate
// limits, as "depotfs serve" is told them.
type enforceConfig struct {
	allow, deny    []string
	auditLog       string
	auditMaxSize   byteSize
	auditRetain    byteSize
	auditRetainAge time.Duration
	rateCalls      float64
	rateCallBurst  int
	rateBytes      byteSize
	rateByteBurst  byteSize
	rateLocal      bool

	host *policy.Host // set by resolve
}

func (c *enforceConfig) flags(fs *flag.FlagSet) {
	c.auditMaxSize, c.rateByteBurst = audit.DefaultMaxSize, mcpserver.DefaultRateByteBurst
	fs.Func("allow", "depot path `prefix` calls may touch at all (repeatable; default /): every caller's grants are bounded by it", appendTo(&c.allow))
	fs.Func("deny", "depot path `prefix` no call may touch, whatever its grants say (repeatable)", appendTo(&c.deny))
	fs.StringVar(&c.auditLog, "audit-log", "", "tamper-evident audit log `file` (one JSON line per call and refused authentication); default audit.log beside --db")
	fs.Var(&c.auditMaxSize, "audit-max-size", "rotate the audit log when it would grow beyond this `size` (bytes, or with KiB, MiB, GiB)")
	fs.Var(&c.auditRetain, "audit-retain-size", "delete the oldest rotated audit log files when together they exceed this `size` (what is kept still verifies); 0: keep all")
	fs.DurationVar(&c.auditRetainAge, "audit-retain-age", 0, "delete rotated audit log files last written longer ago than this `duration` (e.g. 2160h); 0: keep all")
	fs.Float64Var(&c.rateCalls, "rate-calls", 0, "tool calls per second per tenant (every credential with the same grants), sustained (0: unlimited, the default: calls are counted per identity and bursts of refusals logged, but hard limits are the operator's choice)")
	fs.IntVar(&c.rateCallBurst, "rate-call-burst", mcpserver.DefaultRateCallBurst, "tool calls per tenant allowed at once")
	fs.Var(&c.rateBytes, "rate-bytes", "content `size` per second per tenant, sustained (0: unlimited, the default)")
	fs.BoolVar(&c.rateLocal, "rate-local", false, "apply the rate limits to callers without a credential too (stdio, loopback HTTP when no authentication is configured); by default only authenticated identities are limited")
	fs.Var(&c.rateByteBurst, "rate-byte-burst", fmt.Sprintf("content `size` per tenant allowed at once, at least %s (the content one call may carry); a larger stream or archive passes when the tenant's bucket is full and its next bytes wait for the excess", formatSize(int64(minRateByteBurst))))
}

// resolve checks the policy flags after parsing and fills in the default
// audit log beside db.
func (c *enforceConfig) resolve(db string) error {
	var err error
	c.host, err = policy.NewHost(c.allow, c.deny)
	c.auditLog = cmp.Or(c.auditLog, defaultAuditLog(db))
	return cmp.Or(err,
		failIf(c.rateCalls < 0 || c.rateBytes < 0 || c.rateCallBurst < 1 || c.rateByteBurst < 1,
			"--rate-calls and --rate-bytes must not be negative, --rate-call-burst and --rate-byte-burst at least 1"),
		failIf(c.rateBytes > 0 && c.rateByteBurst < minRateByteBurst,
			"--rate-byte-burst %s is less than %s, the content one call may carry, so it could not be honoured: set at least --rate-byte-burst %s",
			c.rateByteBurst.String(), formatSize(int64(minRateByteBurst)), formatSize(int64(minRateByteBurst))),
		failIf(c.auditMaxSize < 4096, "--audit-max-size must be at least 4KiB"),
		failIf(c.auditRetain < 0 || c.auditRetainAge < 0, "--audit-retain-size and --audit-retain-age must not be negative"),
		failIf(c.auditRetain > 0 && c.auditRetain < c.auditMaxSize,
			"--audit-retain-size must be 0 or at least --audit-max-size: it counts whole rotated files"),
	)
}

// minRateByteBurst is the least --rate-byte-burst serve takes: the
// content one call may carry (serve keeps mcpserver's limits on one call).
// A smaller burst could not be honoured, since such a call arrives at
// once; it used to be raised silently.
const minRateByteBurst = byteSize(max(mcpserver.DefaultMaxContentBytes, mcpserver.DefaultMaxBatchBytes))

// defaultAuditLog is the audit log beside the database db.
func defaultAuditLog(db string) string { return filepath.Join(filepath.Dir(db), "audit.log") }

// rate returns the rate limits for mcpserver.Options, where 0 means
// unlimited as it does here.
func (c *enforceConfig) rate() ratelimit.Limits {
	return ratelimit.Limits{
		Calls: c.rateCalls, CallBurst: c.rateCallBurst,
		Bytes: float64(c.rateBytes), ByteBurst: int(c.rateByteBurst),
	}
}
