package scaling

import (
	"runtime"

	"github.com/dablooms/dablooms/counting4"
)

// batchGroup is how many keys a batch lookup keeps in flight: enough to
// overlap the cache misses of a group, few enough for the probes to stay in
// L1.
const batchGroup = 16

// batchFilters is the longest chain whose probes a batch keeps for a whole
// group; longer chains are probed one key at a time (still overlapping the
// misses of the chain's filters).
const batchFilters = 8

// ContainsBatch sets out[i] = Contains(keys[i]) for every key, faster than
// calling Contains in a loop: for a group of keys it first hashes every key
// and prepares its probe in every filter, then touches all their blocks in
// one tight loop (so the cache misses overlap: the loop is short enough for
// the CPU to have them all in flight), and only then tests them. out must be
// at least as long as keys.
func (f *Filter) ContainsBatch(keys [][]byte, out []bool) {
	if len(out) < len(keys) {
		panic("dablooms: ContainsBatch: out is shorter than keys")
	}
	out = out[:len(keys)]
	// No registration with the Filter: holding the chain keeps the mapping
	// (see mapKeep).
	c, err := f.current()
	if err != nil {
		clear(out)
		return
	}
	defer runtime.KeepAlive(c)
	if len(c.f) > batchFilters {
		for i, k := range keys {
			out[i] = containsIn(c, f.hash(c, k))
		}
		return
	}
	var probes [batchGroup * batchFilters]counting4.Probe
	nf := len(c.f)
	for start := 0; start < len(keys); start += batchGroup {
		group := keys[start:min(start+batchGroup, len(keys))]
		for i, k := range group {
			h := f.hash(c, k)
			for j, m := range c.f {
				probes[i*nf+j] = m.cf.Prepare(m.keyHash(h))
			}
		}
		var sink uint64
		for i := range group {
			for j, m := range c.f {
				sink |= m.cf.TouchProbe(probes[i*nf+j])
			}
		}
		for i := range group {
			found := false
			for j := nf - 1; j >= 0 && !found; j-- {
				found = c.f[j].cf.ContainsProbe(probes[i*nf+j])
			}
			out[start+i] = found && sink|1 != 0
		}
	}
}
