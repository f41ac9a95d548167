package counting4

import (
	"sync/atomic"

	"github.com/dablooms/dablooms/header"
)

// The tests of a blocked layout's positions for ContainsProbes (a batch).
// ContainsProbe (one key) uses containsBlock instead, which stops at the
// first zero counter: for one key that is faster, for a batch of keys in
// flight the branch-free test is (docs/PERFORMANCE.md). A block starts at a multiple of its counters (256 or 128),
// so the position of chunk x is word x>>4 of the block, nibble x&15. The
// positions of one state word are tested without a branch each, and by
// independent shifts of the state rather than a chain of them.

// zero1024 is 1 if the counter of 8-bit chunk x (the low byte of x) of a
// Blocked1024 block is zero, 0 if not.
func zero1024(blk *[16]uint64, x uint64) uint64 {
	return (atomic.LoadUint64(&blk[x>>4&15])>>(x&15*4)&15 - 1) >> 63
}

// containsBlock1024 tests the k positions of state s in a Blocked1024
// block: 8-bit chunks of s, re-mixed every 8 positions (as in
// blockedPositions).
func containsBlock1024(blk *[16]uint64, s uint64, k int) bool {
	for ; k > 8; k -= 8 {
		if zero1024x8(blk, s) != 0 {
			return false
		}
		s = header.Fmix64(s ^ golden)
	}
	if k == 8 {
		return zero1024x8(blk, s) == 0
	}
	var z uint64
	for ; k > 0; k-- {
		z |= zero1024(blk, s)
		s >>= 8
	}
	return z == 0
}

// zero1024x8 is non-zero if any of the 8 counters of state s is zero.
func zero1024x8(blk *[16]uint64, s uint64) uint64 {
	return zero1024(blk, s) | zero1024(blk, s>>8) | zero1024(blk, s>>16) | zero1024(blk, s>>24) |
		zero1024(blk, s>>32) | zero1024(blk, s>>40) | zero1024(blk, s>>48) | zero1024(blk, s>>56)
}

// zero512 is 1 if the counter of 7-bit chunk x (the low 7 bits of x) of a
// Blocked512 block is zero, 0 if not.
func zero512(blk *[8]uint64, x uint64) uint64 {
	return (atomic.LoadUint64(&blk[x>>4&7])>>(x&15*4)&15 - 1) >> 63
}

// containsBlock512 tests the k positions of state s in a Blocked512 block:
// 7-bit chunks of s, re-mixed every 9 positions.
func containsBlock512(blk *[8]uint64, s uint64, k int) bool {
	for ; k > 9; k -= 9 {
		if zero512x9(blk, s) != 0 {
			return false
		}
		s = header.Fmix64(s ^ golden)
	}
	if k == 9 {
		return zero512x9(blk, s) == 0
	}
	var z uint64
	for ; k > 0; k-- {
		z |= zero512(blk, s)
		s >>= 7
	}
	return z == 0
}

// zero512x9 is non-zero if any of the 9 counters of state s is zero.
func zero512x9(blk *[8]uint64, s uint64) uint64 {
	return zero512(blk, s) | zero512(blk, s>>7) | zero512(blk, s>>14) | zero512(blk, s>>21) |
		zero512(blk, s>>28) | zero512(blk, s>>35) | zero512(blk, s>>42) | zero512(blk, s>>49) |
		zero512(blk, s>>56)
}
