package counting4

import "github.com/dablooms/dablooms/header"

// Order returns the place of key hash h in a sweep of the filter: for the
// blocked layouts, keys sorted by Order are sorted by block (a key's block
// is the high half of Order(h) times the number of blocks, see blockStart,
// so it never decreases as Order grows), and a batch applied in that order
// walks the counters once from first to last. Order is a bijection, so h
// is recovered from it (PrepareOrder). For the other layouts a key has no
// block and Order is h.
func (f *Filter) Order(h uint64) uint64 {
	if f.layout.blockSize() == 0 {
		return h
	}
	return header.Fmix64(h)
}

// Sweeps reports whether sorting keys by Order gives their updates
// locality: true for the blocked layouts.
func (f *Filter) Sweeps() bool { return f.layout.blockSize() != 0 }

// PrepareOrder returns the key hash h of o = Order(h) and its probe,
// Prepare(h), without hashing again what Order hashed.
func (f *Filter) PrepareOrder(o uint64) (h uint64, p Probe) {
	w, _ := f.layout.chunks()
	if w == 0 {
		return o, f.Prepare(o) // (Order hashed nothing: o is h)
	}
	h = unfmix64(o)
	base, s := blockStartMixed(o, f.counters, w)
	return h, Probe{h: h, base: base, s: s}
}

// unfmix64 is the inverse of header.Fmix64: each of its steps undone in
// the opposite order (x ^= x>>33 is its own inverse, since 33 ≥ 64/2, and
// an odd multiplier has an inverse modulo 2^64).
func unfmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= fmixInv2
	x ^= x >> 33
	x *= fmixInv1
	x ^= x >> 33
	return x
}

// fmixInv1 and fmixInv2 are the inverses modulo 2^64 of Fmix64's
// multipliers (TestUnfmix64 checks both products are 1).
var (
	fmixInv1 = inverse64(0xff51afd7ed558ccd)
	fmixInv2 = inverse64(0xc4ceb9fe1a85ec53)
)

// inverse64 returns the inverse of odd a modulo 2^64 by Newton's
// iteration: x = a is right in its low 3 bits (a*a = 1 mod 8 for odd a),
// and each step doubles the bits that are right (3, 6, 12, 24, 48, 96).
func inverse64(a uint64) uint64 {
	x := a
	for range 5 {
		x *= 2 - a*x
	}
	return x
}

// BlockOf returns the index of p's block (of BlockWords words each) for
// the blocked layouts, 0 for the others.
func (f *Filter) BlockOf(p Probe) uint64 {
	if bs := f.layout.blockSize(); bs != 0 {
		return p.base / bs
	}
	return 0
}
