package counting4

import "sync/atomic"

// StoreOrdered stores v at p so that other processes see it in program order
// relative to the memory operations around it: an atomic store, on every
// platform. For in-flight records, which only their owner writes, and the
// counters of an exclusive writer.
//
// The record protocol needs each store ordered after every store before it
// (the evidence before the doubt mask, the mask before the counter, the
// counter before the changed mask, that before the next position's
// evidence), for a reader in another process and for repair after the
// writer was killed. The Go memory model gives that to atomic operations
// only: they are sequentially consistent, so a reader whose atomic load
// sees this store is synchronized after it and sees every store the writer
// made before it; and their one total order agrees with program order, so
// a writer stopped at any point (killed) has made a prefix of them. Plain
// stores have no such promise: the compiler may move or merge them where
// nothing in the same goroutine can tell, and a racing reader may see them
// in any order. The stores cost a locked instruction each on amd64 (XCHG;
// a release store, STLR, on arm64).
func StoreOrdered(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
