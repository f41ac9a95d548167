//go:build race

package counting4

// raceEnabled: the race detector slows atomics about tenfold; the purely
// statistical tests, which exercise no concurrency, are skipped under it.
const raceEnabled = true
