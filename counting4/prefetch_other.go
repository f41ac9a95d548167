//go:build !(amd64 || arm64) || purego

package counting4

import (
	"sync/atomic"
	"unsafe"
)

// prefetch1 loads *p: without a prefetch instruction, a load is what starts
// the miss (it holds up retirement until the line arrives).
func prefetch1(p *uint64) { atomic.LoadUint64(p) }

// prefetch2 loads *p and the word 64 bytes after it (the second line of a
// Blocked1024 block; p is the block's first word, so both are in the block).
func prefetch2(p *uint64) {
	atomic.LoadUint64(p)
	atomic.LoadUint64((*uint64)(unsafe.Add(unsafe.Pointer(p), 64)))
}

// prefetchProbes1 loads the first word of each probe's Blocked512 block.
func prefetchProbes1(words *uint64, ps *Probe, n int) {
	for _, p := range unsafe.Slice(ps, n) {
		prefetch1((*uint64)(unsafe.Add(unsafe.Pointer(words), p.base/2)))
	}
}

// prefetchProbes2 loads the first word of each line of each probe's
// Blocked1024 block.
func prefetchProbes2(words *uint64, ps *Probe, n int) {
	for _, p := range unsafe.Slice(ps, n) {
		prefetch2((*uint64)(unsafe.Add(unsafe.Pointer(words), p.base/2)))
	}
}
