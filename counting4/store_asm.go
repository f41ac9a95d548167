//go:build (amd64 || arm64) && !race && !purego

package counting4

// storeRelease is StoreOrdered's store: MOVQ on amd64, STLR on arm64
// (store.go says why a call of assembly).
//
//go:noescape
func storeRelease(p *uint64, v uint64)

// storeRelease3 is three of StoreOrdered's stores in one call: av at a,
// then bv at b, then cv at c.
//
//go:noescape
func storeRelease3(a *uint64, av uint64, b *uint64, bv uint64, c *uint64, cv uint64)

// storeRelease2 is two of StoreOrdered's stores in one call: av at a,
// then bv at b.
//
//go:noescape
func storeRelease2(a *uint64, av uint64, b *uint64, bv uint64)

// storeReleaseZero4 is StoreOrdered's store of av at a, then of 0 at
// z[0], z[1], z[2] and z[3], in one call.
//
//go:noescape
func storeReleaseZero4(a *uint64, av uint64, z *[4]uint64)
