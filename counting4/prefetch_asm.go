//go:build (amd64 || arm64) && !purego

package counting4

// prefetch1 prefetches the cache line holding *p into every cache level
// (PREFETCHT0 on amd64, PRFM PLDL1KEEP on arm64). It never faults.
//
//go:noescape
func prefetch1(p *uint64)

// prefetch2 prefetches the 64-byte line holding *p and the one after it: the
// two lines of a Blocked1024 block (p is its first word; in a file the
// blocks are 128-byte aligned).
//
//go:noescape
func prefetch2(p *uint64)

// prefetchProbes1 prefetches the line at byte offset ps[i].base/2 from words
// (the block of a Blocked512 probe) for each of the n probes at ps.
//
//go:noescape
func prefetchProbes1(words *uint64, ps *Probe, n int)

// prefetchProbes2 prefetches the two lines from byte offset ps[i].base/2 on
// (the block of a Blocked1024 probe) for each of the n probes at ps.
//
//go:noescape
func prefetchProbes2(words *uint64, ps *Probe, n int)
