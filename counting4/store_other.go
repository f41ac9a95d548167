//go:build !(amd64 || 386) || race

package counting4

import "sync/atomic"

// StoreOrdered stores v at p so that other processes see it in program order
// relative to the atomic operations around it (a plain store on x86, a
// release store elsewhere and under the race detector). For in-flight
// records, which only their owner writes.
func StoreOrdered(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
