package counting4

// PrefetchProbe starts loading the cache lines of the probe's block (every
// line of a blocked layout's block; the line of the first counter for the
// others) without waiting for them: a software prefetch where the
// architecture has one (amd64, arm64), which, unlike a load, does not hold
// up the instructions after it while the miss is pending. A batch lookup
// prefetches a key's block some keys before it tests it, so that the misses
// of many keys overlap each other and the hashing of the keys in between.
// Elsewhere it loads the lines' first words. It never
// changes the result of ContainsProbe.
func (f *Filter) PrefetchProbe(p Probe) {
	if f.layout == Blocked1024 { // (the default layout, tested first)
		prefetch2(&f.words[p.base>>4])
		return
	}
	f.prefetchOther(p)
}

// prefetchOther is PrefetchProbe for the layouts but Blocked1024.
func (f *Filter) prefetchOther(p Probe) {
	if f.layout.blockSize() == BlockCounters512 {
		prefetch1(&f.words[p.base>>4])
		return
	}
	f.prefetchFirst(p.h)
}

// prefetchFirst prefetches the line of the key's first counter (the layouts
// without blocks: the other k-1 counters are elsewhere anyway).
func (f *Filter) prefetchFirst(h uint64) {
	var pos [1]uint64
	if f.layout == Partitioned {
		pos[0] = uint64(uint32(h) % uint32(f.counters/uint64(f.k)))
	} else {
		f.layout.Positions(h, f.counters, 1, pos[:])
	}
	prefetch1(&f.words[pos[0]>>4])
}
