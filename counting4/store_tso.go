//go:build (amd64 || 386) && !race

package counting4

// StoreOrdered stores v at p so that other processes see it in program order
// relative to the atomic operations around it (a plain store on x86, a
// release store elsewhere and under the race detector). For in-flight
// records, which only their owner writes.
//
// On x86 (total store order) a plain store is seen by other processes in
// program order relative to the atomic operations around it, and the Go
// compiler does not move stores across atomics.
func StoreOrdered(p *uint64, v uint64) { *p = v }
