package scaling

// batchGroup is how many keys a batch lookup keeps in flight: enough to
// overlap the cache misses of a group, few enough for the hashes to stay in
// registers and L1.
const batchGroup = 16

// ContainsBatch sets out[i] = Contains(keys[i]) for every key, faster than
// calling Contains in a loop: it hashes a group of keys and starts the cache
// misses of all their blocks, in every filter, before testing any, so the
// misses overlap. out must be at least as long as keys.
func (f *Filter) ContainsBatch(keys [][]byte, out []bool) {
	if len(out) < len(keys) {
		panic("dablooms: ContainsBatch: out is shorter than keys")
	}
	c := f.chain.Load()
	if c == nil {
		clear(out[:len(keys)])
		return
	}
	g, err := f.enter(uint64(len(keys)))
	if err != nil {
		clear(out[:len(keys)])
		return
	}
	defer g.n.Add(-1)
	if c, err = f.current(); err != nil {
		clear(out[:len(keys)])
		return
	}
	var hs [batchGroup]hashes
	for start := 0; start < len(keys); start += batchGroup {
		group := keys[start:min(start+batchGroup, len(keys))]
		var sink uint64
		for i, k := range group {
			hs[i] = f.hash(c, k)
			for _, m := range c.f {
				sink |= m.cf.TouchProbe(m.cf.Prepare(m.keyHash(hs[i])))
			}
		}
		for i := range group {
			found := false
			for j := len(c.f) - 1; j >= 0 && !found; j-- {
				m := c.f[j]
				found = m.cf.ContainsProbe(m.cf.Prepare(m.keyHash(hs[i])))
			}
			out[start+i] = found && sink|1 != 0
		}
	}
}
