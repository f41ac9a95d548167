//go:build (amd64 || arm64) && !race && !purego

package counting4

// storeRelease is StoreOrdered's store: MOVQ on amd64, STLR on arm64
// (store.go says why a call of assembly).
//
//go:noescape
func storeRelease(p *uint64, v uint64)
