// Package counting4 is a counting Bloom filter of 4-bit counters packed 16 to
// a uint64 word, over a []uint64 it does not own (a mapped file or the heap).
//
// Counter c lives in word c/16 at bits 4*(c%16) .. 4*(c%16)+3: the low nibble
// of a little-endian word is counter 0. Every counter change is one atomic
// compare-and-swap on its word, so concurrent Add and Remove never lose an
// update, also across processes sharing a mapping. Counters saturate at 15
// and a saturated counter is never decremented, so a saturated counter can
// cost accuracy but never a false negative.
//
// The filter takes a 64-bit key hash computed once by the caller and shared by
// every filter of a chain; Layout maps it to k counters. Four layouts exist:
//
//   - Blocked1024 (the default for new filters): a key's k counters all lie
//     in one 128-byte block of 256 counters (two adjacent cache lines). The
//     block is fastrange(g, blocks) with g = fmix64(h); the positions are
//     8-bit chunks of s = fmix64(g ^ c), re-mixed every 8 positions.
//   - Blocked512: the same in one 64-byte block of 128 counters (7-bit
//     chunks, re-mixed every 9): faster lookups, but blocks of 128 counters
//     fill unevenly, which costs more counters, far more at small targets
//     (docs/PERFORMANCE.md has the figures).
//   - Classic: k counters anywhere in m counters, position j =
//     fastrange(x_j, m) with x_0 = h1 and x_j = fmix64(h1 + j·h2) after.
//     m = ⌈-n ln p / ln²2⌉, k = round(m/n · ln 2). Smallest, but k misses.
//   - Partitioned: dablooms 0.9.1's layout, kept for converted files: k
//     partitions of cpf counters, index (uint32)(h1 + j·h2) % cpf + j·cpf
//     where h1, h2 are the low and high halves of the key hash.
//
// Sizing of the blocked layouts is exact, not the textbook formula: keys per
// block are Poisson(n/blocks), and a block holding i keys answers a foreign
// query positively with probability E[(S/B)^k], where S, the number of its
// B counters that are non-zero after i·k uniform increments, has its
// distribution computed exactly by dynamic programming. Size picks the
// fewest blocks (over k) whose false-positive rate Σ_i P(i)·E[(S_i/B)^k]
// meets the target; measured rates agree within a few percent.
//
// All index arithmetic is 64-bit: filters of more than 2^32 counters work.
//
// Stability: this package is low-level, the counters under scaling's
// filters. Its API (layouts aside, whose bytes docs/FORMAT.md fixes) may
// change between releases as scaling needs, and CHANGELOG.md lists such
// changes; programs should use scaling.
package counting4
