package pastcheck

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// SeedEnv is the environment variable that fixes the seed of every run,
// to repeat a failure.
const SeedEnv = "DEPOTFS_PASTCHECK_SEED"

// TraceEnv, set to 1, makes Check trace every write (Config.Trace).
const TraceEnv = "DEPOTFS_PASTCHECK_TRACE"

// Seed returns the seed SeedEnv gives, else a new random one.
func Seed() uint64 {
	if v, err := strconv.ParseUint(os.Getenv(SeedEnv), 10, 64); err == nil {
		return v
	}
	return rand.Uint64()
}

// Check runs Run on s and fails t with each anomaly; the report's line
// names the seed, which SeedEnv replays.
func Check(t testing.TB, ctx context.Context, s store.Store, cfg Config) Report {
	t.Helper()
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	cfg.Trace = cfg.Trace || os.Getenv(TraceEnv) != ""
	rep := Run(ctx, s, cfg)
	t.Log(rep)
	for _, a := range rep.Anomalies {
		t.Error(a)
	}
	if len(rep.Anomalies) > 0 {
		t.Logf("repeat with %s=%d", SeedEnv, rep.Seed)
	}
	return rep
}
