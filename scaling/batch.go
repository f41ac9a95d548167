package scaling

import (
	"errors"
	"runtime"

	"github.com/dablooms/dablooms/counting4"
)

// batchGroup is how many keys a batch lookup hashes, prepares and prefetches
// (and later tests) at a time: 8 keys of Blocked1024 are 16 lines, about as
// many as a core has misses in flight (docs/PERFORMANCE.md has the sizes
// tried).
const batchGroup = 8

// batchDepth is how many keys a batch lookup keeps in flight (a multiple of
// batchGroup): a key's block is prefetched batchDepth keys before it is
// tested, longer than a miss with a page walk takes (docs/PERFORMANCE.md).
const batchDepth = 16

// batchKeysAhead is how many keys ahead of the group being hashed a batch
// lookup prefetches the keys' bytes: as far as the blocks, which take as
// long to arrive.
const batchKeysAhead = batchDepth

// batchRing is the number of keys whose probes a batch lookup keeps: those
// in flight and the group being prepared.
const batchRing = batchDepth + batchGroup

// batchFilters is the longest chain whose probes a batch keeps for a whole
// group; longer chains are probed one key at a time (still overlapping the
// misses of the chain's filters).
const batchFilters = 8

// ContainsBatch sets out[i] = Contains(keys[i]) for every key, faster than
// calling Contains in a loop: it is a software pipeline over groups of keys
// that hashes a group and prefetches its blocks in every filter, and tests a
// key only batchDepth keys after its prefetch, so that the cache misses of
// many keys overlap each other and the hashing (it prefetches the keys' bytes
// ahead of hashing them too). out must be at least as long as keys; the
// elements past len(keys) are left as they are.
func (f *Filter) ContainsBatch(keys [][]byte, out []bool) {
	if len(out) < len(keys) {
		panic("dablooms: ContainsBatch: out is shorter than keys")
	}
	out = out[:len(keys)]
	// No registration with the Filter: holding the chain keeps the mapping
	// (see mapKeep).
	c, err := f.current()
	for f.again(err) { // the file was replaced (see Contains)
		f = f.live()
		c, err = f.current()
	}
	if err != nil {
		// Closed: false. A chain that cannot be read: every key may be
		// present (see Contains).
		v := !errors.Is(err, ErrClosed)
		for i := range out {
			out[i] = v
		}
		return
	}
	defer runtime.KeepAlive(c)
	clear(out)
	if len(c.f) == 1 {
		f.containsBatch1(c, keys, out)
		return
	}
	// A longer chain is looked up batchFilters filters at a time, newest
	// first, each pass adding what it finds to out.
	for end := len(c.f); end > 0; end -= batchFilters {
		sub := &chain{f: c.f[max(end-batchFilters, 0):end], hasMurmur: c.hasMurmur}
		f.containsBatchN(sub, keys, out)
	}
}

// containsBatch1 and containsBatchN give containsPipelined a ring as long as
// the chain needs, on the stack: every call zeroes it.
func (f *Filter) containsBatch1(c *chain, keys [][]byte, out []bool) {
	var ring [1][batchRing]counting4.Probe
	f.containsPipelined(c, keys, out, ring[:])
}

func (f *Filter) containsBatchN(c *chain, keys [][]byte, out []bool) {
	var ring [batchFilters][batchRing]counting4.Probe
	f.containsPipelined(c, keys, out, ring[:len(c.f)])
}

// containsPipelined sets out[i] for the keys found in a chain of at most
// batchFilters filters (it never clears one), with ring[j] the probes of
// filter j: a software pipeline over
// groups of batchGroup keys. For each group
// it hashes the keys, prepares their probes and prefetches their blocks
// (PrepareProbes: a prefetch, unlike a load, does not hold up the work after
// it while the miss is pending), and then tests the group batchDepth keys
// back, whose blocks have had the time of the groups in between to arrive.
func (f *Filter) containsPipelined(c *chain, keys [][]byte, out []bool, ring [][batchRing]counting4.Probe) {
	var hs [batchGroup]hashes
	var kh [batchGroup]uint64
	n := len(keys)
	if n == 0 {
		return
	}
	prefetchKeys(&keys[0], min(n, batchKeysAhead))
	tested := 0
	for start := 0; start < n; start += batchGroup {
		if a := start + batchKeysAhead; a < n {
			prefetchKeys(&keys[a], min(n-a, batchGroup))
		}
		slot := start / batchGroup % (batchRing / batchGroup) * batchGroup
		group := keys[start:min(start+batchGroup, n)]
		for i, k := range group {
			hs[i] = f.hash(c, k)
		}
		for j, m := range c.f {
			for i := range group {
				kh[i] = m.keyHash(hs[i])
			}
			m.cf.PrepareProbes(kh[:len(group)], ring[j][slot:slot+len(group)])
		}
		if start >= batchDepth {
			f.testGroup(c, ring, tested, out[tested:tested+batchGroup])
			tested += batchGroup
		}
	}
	for ; tested < n; tested += batchGroup {
		f.testGroup(c, ring, tested, out[tested:min(tested+batchGroup, n)])
	}
}

// testGroup tests the probes of the group of keys from start on (len(out)
// keys) in every filter, newest first, setting out[i] for a key found.
func (f *Filter) testGroup(c *chain, ring [][batchRing]counting4.Probe, start int, out []bool) {
	slot := start / batchGroup % (batchRing / batchGroup) * batchGroup
	for j := len(c.f) - 1; j >= 0; j-- {
		c.f[j].cf.ContainsProbes(ring[j][slot:slot+len(out)], out)
	}
}
