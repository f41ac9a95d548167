//go:build !(amd64 || 386) || race

package counting4

import "sync/atomic"

// storeOrdered stores v at p with a release barrier, so that the record is
// seen in program order relative to the counter updates around it.
func storeOrdered(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// StoreOrdered stores v at p so that other processes see it in program order
// relative to the atomic operations around it (a plain store on x86, a
// release store elsewhere and under the race detector). For in-flight
// records, which only their owner writes.
func StoreOrdered(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
