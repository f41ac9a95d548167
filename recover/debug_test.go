package recover

import (
	"os"
	"strconv"
	"testing"
)

// TestDebugSeed replays one trial with a report of each recovery step.
func TestDebugSeed(t *testing.T) {
	seed, err := strconv.ParseInt(os.Getenv("DABLOOMS_DEBUG_SEED"), 10, 64)
	if err != nil {
		t.Skip("set DABLOOMS_DEBUG_SEED")
	}
	debugRecovery = t
	defer func() { debugRecovery = nil }()
	r := newCrashRegion()
	if v := crashTrial(t, r, seed, os.Getenv("DABLOOMS_DEBUG_NEG") != "", &crashStats{}, nil); v != "" {
		t.Error(v)
	}
}
