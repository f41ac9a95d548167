package legacy

import "github.com/dablooms/dablooms/header"

// Seed is the original's MurmurHash3 seed (SALT_CONSTANT).
const Seed = header.MurmurSeed

// Hash returns the first 64-bit word of MurmurHash3 x64/128 of key with the original's seed
// (header.HashKeyOriginal). Its low and high 32 bits are the h1 and h2 from which Index derives
// every counter index.
func Hash(key []byte) uint64 { return header.HashKeyOriginal(key) }

// Index returns the counter index, within its filter, of hash function j (0 <= j < K) for a key
// whose Hash is h, in a filter with countsPerFunc counters per function:
//
//	uint32(h1 + j*h2) % countsPerFunc + j*countsPerFunc
//
// computed in 32-bit unsigned arithmetic like the original, including its wrap-around for
// filters of more than 2^32 counters (the original wrote to those wrapped indices too).
func Index(h uint64, j int, countsPerFunc uint32) uint32 {
	h1, h2, uj := uint32(h), uint32(h>>32), uint32(j)
	return (h1+uj*h2)%countsPerFunc + uj*countsPerFunc
}
