// Floor 4 (operations) of package scaling: batched lookups.

package scaling

import (
	"errors"
	"runtime"
	"slices"

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
// group; a longer chain is looked up batchFilters filters at a time.
const batchFilters = 8

// batchChunk is how many keys a lookup on a chain longer than batchFilters
// hashes at a time: it keeps their hashes (4 KB, in L1) for every pass of
// batchFilters filters over them, so each key is hashed once.
const batchChunk = 256

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
	for !f.containsBatchOnce(keys, out) {
		// The mapping was detached while the batch read it (see mapKeep):
		// every "absent" may be wrong, so the whole batch asks again.
		f = f.live()
	}
}

// containsBatchOnce is ContainsBatch on the chain current now; it reports
// false if the chain's mapping was detached during the call and some key
// was answered absent (the answers do not stand).
func (f *Filter) containsBatchOnce(keys [][]byte, out []bool) bool {
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
		return true
	}
	defer runtime.KeepAlive(c)
	clear(out)
	f.containsChain(c, keys, out)
	return c.keep.answered() || !slices.Contains(out, false)
}

// containsChain sets out[i] for the keys found in c's filters.
func (f *Filter) containsChain(c *chain, keys [][]byte, out []bool) {
	if len(c.f) == 1 {
		f.containsBatch1(c, keys, out)
		return
	}
	if len(c.f) <= batchFilters {
		f.containsBatchN(c, keys, out)
		return
	}
	// A longer chain: in passes of batchFilters filters, each key hashed once.
	f.containsBatchLong(c, keys, out)
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

// containsBatchLong looks keys up in a chain longer than batchFilters, a
// chunk of batchChunk keys at a time: it hashes the chunk's keys once, then
// looks them up batchFilters filters at a time, newest first, each pass
// pipelined as containsPipelined is and asking only about the keys that no
// newer filter holds.
func (f *Filter) containsBatchLong(c *chain, keys [][]byte, out []bool) {
	var hs [batchChunk]hashes
	var idx [batchChunk]uint16
	var ring [batchFilters][batchRing]counting4.Probe
	for lo := 0; lo < len(keys); lo += batchChunk {
		ks := keys[lo:min(lo+batchChunk, len(keys))]
		o := out[lo : lo+len(ks)]
		prefetchKeys(&ks[0], min(len(ks), batchKeysAhead))
		for i, k := range ks {
			if a := i + batchKeysAhead; a < len(ks) && a%batchGroup == 0 {
				prefetchKeys(&ks[a], min(len(ks)-a, batchGroup))
			}
			hs[i] = f.hash(c, k)
			idx[i] = uint16(i)
		}
		n := len(ks)
		for end := len(c.f); end > 0 && n > 0; end -= batchFilters {
			sub := c.f[max(end-batchFilters, 0):end]
			containsHashed(sub, &hs, idx[:n], o, ring[:len(sub)])
			// The keys still not found, for the older filters.
			m := 0
			for _, i := range idx[:n] {
				idx[m] = i
				m += int(b2u(!o[i]))
			}
			n = m
		}
	}
}

// containsHashed sets o[i] for the keys i in idx found in fs (at most
// batchFilters filters), with their hashes in hs and ring[j] the probes of
// fs[j]: the pipeline of containsPipelined over keys already hashed.
func containsHashed(fs []*member, hs *[batchChunk]hashes, idx []uint16, o []bool, ring [][batchRing]counting4.Probe) {
	var kh [batchGroup]uint64
	n := len(idx)
	tested := 0
	for start := 0; start < n; start += batchGroup {
		slot := start / batchGroup % (batchRing / batchGroup) * batchGroup
		group := idx[start:min(start+batchGroup, n)]
		for j, m := range fs {
			for i, k := range group {
				kh[i] = m.keyHash(hs[k])
			}
			m.cf.PrepareProbes(kh[:len(group)], ring[j][slot:slot+len(group)])
		}
		if start >= batchDepth {
			testHashed(fs, ring, tested, idx[tested:tested+batchGroup], o)
			tested += batchGroup
		}
	}
	for ; tested < n; tested += batchGroup {
		testHashed(fs, ring, tested, idx[tested:min(tested+batchGroup, n)], o)
	}
}

// testHashed tests the probes of the group of keys from position start of
// idx on (len(group) keys, none of them found yet) in every filter of fs,
// newest first, and sets o[group[i]] for a key found.
func testHashed(fs []*member, ring [][batchRing]counting4.Probe, start int, group []uint16, o []bool) {
	slot := start / batchGroup % (batchRing / batchGroup) * batchGroup
	var found [batchGroup]bool
	for j := len(fs) - 1; j >= 0; j-- {
		fs[j].cf.ContainsProbes(ring[j][slot:slot+len(group)], found[:len(group)])
	}
	for i, k := range group {
		o[k] = found[i]
	}
}

// b2u is 1 for true, 0 for false (branch-free: whether a key was found is
// not predictable).
func b2u(b bool) uint {
	if b {
		return 1
	}
	return 0
}
