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
// every filter of a chain; Layout maps it to k counters. Three layouts exist:
//
//   - Blocked512 (the default for new filters): a key's k counters all lie in
//     one 64-byte block of 128 counters, so a lookup touches one cache line.
//     The block is fastrange(g, blocks) with g = fmix64(h + salt), and the
//     in-block positions are 7-bit chunks of fmix64(g ^ c), re-mixed every 9
//     positions. Sizing: keys per block are Poisson(n/blocks), so the
//     false-positive rate is Σ_i P(i) (1-(1-1/128)^(k·i))^k; Size picks the
//     fewest blocks (and the k) meeting the target exactly by that formula.
//   - Classic: k counters anywhere in m counters by 64-bit double hashing and
//     fastrange. m = ⌈-n ln p / ln²2⌉, k = round(m/n · ln 2).
//   - Partitioned: dablooms 0.9.1's layout, kept for converted files: k
//     partitions of cpf counters, index (uint32)(h1 + j·h2) % cpf + j·cpf
//     where h1, h2 are the low and high halves of the key hash.
//
// All index arithmetic is 64-bit: filters of more than 2^32 counters work.
package counting4
