//go:build (amd64 || 386) && !race

package counting4

// storeOrdered stores v at p. On x86 (total store order) a plain store is seen
// by other processes in program order relative to the atomic operations
// around it, and the Go compiler does not move stores across atomics.
func storeOrdered(p *uint64, v uint64) { *p = v }
