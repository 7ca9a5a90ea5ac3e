package pastcheck

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// SeedEnv is the environment variable that fixes the seed of every run,
// to repeat a failure.
const SeedEnv = "DEPOTFS_PASTCHECK_SEED"

// KnownEnv, set to 1, runs the features a store's test omits for a known
// bug instead of skipping them: to check a fix.
const KnownEnv = "DEPOTFS_PASTCHECK_KNOWN"

// SkipKnown skips t, which checks feature f that a store fails for the
// reason why, unless KnownEnv is set.
func SkipKnown(t testing.TB, f Feature, why string) {
	t.Helper()
	if os.Getenv(KnownEnv) == "" {
		t.Skipf("%s: known bug, skipped until its fix lands (%s=1 runs it): %s", f, KnownEnv, why)
	}
}

// OmitAllBut returns the features of known except keep: a run that checks
// keep alone of them.
func OmitAllBut[V any](known map[Feature]V, keep Feature) []Feature {
	var out []Feature
	for f := range known {
		if f != keep {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

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
