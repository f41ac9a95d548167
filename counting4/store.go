package counting4

// StoreOrdered stores v at p so that other processes see it in program order
// relative to the stores before it, and a process killed at any instruction
// has made a prefix of its stores: a release store. For in-flight records,
// which only their owner writes, and the counters of an exclusive writer.
//
// The record protocol needs each store ordered after every store before it
// (the evidence before the doubt mask, the mask before the counter, the
// counter before the changed mask, that before the next position's
// evidence), for a reader in another process and for repair after the
// writer was killed. Two things could reorder plain stores: the compiler,
// which may move or merge them where nothing in the same goroutine can
// tell (and may drop a store that a later one to the same word overwrites),
// and the processor. So on amd64 and arm64 StoreOrdered is one instruction
// in a function of assembly (store_asm.go), which the compiler neither
// inlines nor sees through: no memory access moves across the call, and
// none is dropped. The instruction orders the store after every earlier
// load and store in hardware: MOVQ on amd64 (whose stores are seen in
// program order), STLR on arm64 (a release store). Elsewhere, and under
// the race detector (which must see the stores as the atomics they act
// as), it is atomic.StoreUint64, whose sequential consistency orders more.
//
// It does not order itself before a later load of another word (no
// store-load fence): where a handshake needs that (a record published
// before the state word is read, I2 of docs/PROTOCOLS.md, on a shared
// handle) the caller uses atomic.StoreUint64. A release store costs a call
// and a store; an atomic store on amd64 is an XCHG, a locked instruction
// that drains the store buffer, and the exclusive writer made a dozen or
// more of them per operation (docs/PERFORMANCE.md, "Exclusive writer").
func StoreOrdered(p *uint64, v uint64) { storeRelease(p, v) }

// StoreOrdered2 is StoreOrdered(a, av) then StoreOrdered(b, bv), in one
// call: a call of assembly costs a handful of instructions (the
// arguments' moves, the call and the return) beside its store, and an
// operation's record claim and finish each make two such stores.
func StoreOrdered2(a *uint64, av uint64, b *uint64, bv uint64) { storeRelease2(a, av, b, bv) }

// StoreOrderedZero4 is StoreOrdered(a, av) then StoreOrdered(&z[i], 0)
// for i from 0 to 3, in one call: an operation's record going idle, then
// its masks and evidence cleared (header.Record.Masks).
func StoreOrderedZero4(a *uint64, av uint64, z *[4]uint64) { storeReleaseZero4(a, av, z) }
