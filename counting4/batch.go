package counting4

// PrepareProbes sets ps[i] = Prepare(hs[i]) and prefetches each probe's
// block (PrefetchProbe) for every i < len(hs); ps must be as long as hs. A
// batch lookup prepares a group of keys with it, works on other keys while
// their blocks arrive, and then tests them with ContainsProbes.
func (f *Filter) PrepareProbes(hs []uint64, ps []Probe) {
	ps = ps[:len(hs)]
	bs := f.layout.blockSize()
	if bs == 0 {
		for i, h := range hs {
			ps[i] = f.Prepare(h) // (as a single lookup's, though only h counts)
			f.prefetchFirst(h)
		}
		return
	}
	w, _ := f.layout.chunks()
	for i, h := range hs {
		base, s := blockStart(h, f.counters, w)
		ps[i] = Probe{h: h, base: base, s: s}
	}
	if len(ps) == 0 {
		return
	}
	// One call for the group: an assembly function is never inlined.
	if bs == BlockCounters1024 {
		prefetchProbes2(&f.words[0], &ps[0], len(ps))
	} else {
		prefetchProbes1(&f.words[0], &ps[0], len(ps))
	}
}

// ContainsProbes sets found[i] to true for every i < len(ps) for which
// ContainsProbe(ps[i]) is true, and leaves the other elements of found as
// they are: over the filters of a chain it computes, into a cleared found,
// whether any filter contains the key. It tests no probe whose found[i] is
// already true. found must be at least as long as ps.
func (f *Filter) ContainsProbes(ps []Probe, found []bool) {
	found = found[:len(ps)]
	w, k := f.words, f.k
	switch f.layout {
	case Blocked1024:
		if k == 8 { // the default error rate's k: one state word
			for i, p := range ps {
				if !found[i] && zero1024x8((*[16]uint64)(w[p.base>>4:]), p.s) == 0 {
					found[i] = true
				}
			}
			return
		}
		for i, p := range ps {
			if !found[i] && containsBlock1024((*[16]uint64)(w[p.base>>4:]), p.s, k) {
				found[i] = true
			}
		}
	case Blocked512:
		for i, p := range ps {
			if !found[i] && containsBlock512((*[8]uint64)(w[p.base>>4:]), p.s, k) {
				found[i] = true
			}
		}
	default:
		for i, p := range ps {
			if !found[i] && f.ContainsProbe(p) {
				found[i] = true
			}
		}
	}
}
