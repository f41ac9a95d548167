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
