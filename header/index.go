package header

import (
	"math/bits"
	"sync/atomic"
)

// The late-add index (version 1.1) records the Adds that had to leave the
// filter their id belongs to. A filter's id range never widens over an id
// that an older filter's range covers (that would make a Remove ambiguous),
// so an Add whose id lies at or below the newest sealed range and that finds
// no room in the slack of the filter owning the id (a writer lagging behind
// the others, ids that go backwards) goes to the newest filter and leaves a
// fingerprint of (key hash, id) in that filter's index. A Remove looks the
// pair up there first.
//
// The index is an open-addressing table of IndexEntries 32-bit entries
// after the filter's counters (FilterDesc.Index bytes). An entry is
// IndexEmpty, IndexCleared (a removed fingerprint: lookups go on past it,
// inserts may reuse it) or a fingerprint ≥ 2. The blocks of the index are
// allocated only when the filter's first late Add needs them (the line word
// at FilterIndexOffset then reads IndexAllocated): a store whose ids never
// go backwards pays no disk for it.
const (
	IndexEmpty     = 0 // an entry never used
	IndexCleared   = 1 // an entry whose fingerprint was removed
	IndexEntrySize = 4 // bytes per entry
	// IndexMaxProbe bounds a probe sequence: an entry lies at most this
	// many slots after its probe start, so a lookup reads at most this many
	// entries (cleared entries never become empty again, and a table whose
	// lookups had to run to an empty entry would slow down for ever). An
	// insert that finds no free entry that close takes the index as full.
	IndexMaxProbe = 64
	// IndexSaturated is how many copies of one pair (key, id) a filter's
	// index takes: 15 late Adds of a key into one filter leave its
	// counters there at 15, the most a counter holds, where no Add or
	// Remove changes them again. A late Add of a pair that has this many
	// entries in the filter, whose counters are all saturated, inserts no
	// entry (and changes nothing), and a Remove of it claims none (and
	// succeeds, as a Remove of a saturated key does): replays of a pair
	// cost no entries past this bound, so they never fill its probe window
	// and seal the filter. Concurrent Adds may each insert one more.
	IndexSaturated = 15

	IndexNone      = 0 // FilterIndexOffset: no index blocks allocated; every entry reads empty
	IndexAllocated = 1 // FilterIndexOffset: the index's blocks are allocated

	// IndexDone is set in a record's index slot word (RecIndexSlotOffset)
	// once the operation's compare-and-swap on the entry happened (an
	// Add's insert, a Remove's clear).
	IndexDone = 1 << 63
)

// IndexBytes returns the size of the late-add index of a filter of the
// given capacity: two entries per item the filter can hold (so a probe
// sequence stays short), in whole pages.
func IndexBytes(capacity uint64) int64 {
	n := 2 * ItemLimit(capacity) * IndexEntrySize
	return int64((n + PageSize - 1) / PageSize * PageSize)
}

// IndexProbe returns the fingerprint of an Add of a key whose filter hash
// is h (the record's hash: salted for the filter) with id, and the slot of
// an index of n entries where its probe sequence starts (then slot+1, …,
// wrapping at n).
func IndexProbe(h, id, n uint64) (fp uint32, slot uint64) {
	x := Fmix64(h ^ Fmix64(id+0x9E3779B97F4A7C15))
	slot, _ = bits.Mul64(x, n)
	fp = uint32(Fmix64(x) >> 32)
	if fp <= IndexCleared {
		fp += 2
	}
	return fp, slot
}

// IndexWindow is what the probe window of one pair holds (ScanIndex).
type IndexWindow struct {
	Copies  int    // entries holding the pair's fingerprint
	First   uint64 // the first of them, if Copies > 0
	Free    uint64 // the first free entry (empty or cleared), if HasFree
	FreeV   uint32 // what Free held
	HasFree bool
}

// ScanIndex reads the probe window of the pair whose fingerprint is fp and
// whose probe sequence starts at slot s (IndexProbe) in the index e, up to
// its first empty entry (an entry never returns to empty, so the pair has
// no entry beyond it) or IndexMaxProbe entries. It loads each entry
// atomically: e may be a map other writers change.
func ScanIndex(e []uint32, fp uint32, s uint64) IndexWindow {
	var w IndexWindow
	n := uint64(len(e))
	for range min(n, IndexMaxProbe) {
		v := atomic.LoadUint32(&e[s])
		switch {
		case v == fp:
			if w.Copies == 0 {
				w.First = s
			}
			w.Copies++
		case v <= IndexCleared && !w.HasFree:
			w.Free, w.FreeV, w.HasFree = s, v, true
		}
		if v == IndexEmpty {
			break
		}
		if s++; s == n {
			s = 0
		}
	}
	return w
}

// Fmix64 is MurmurHash3's 64-bit finalizer, a bijective avalanche mix: it
// derives counter positions (counting4) and late-add index probes.
func Fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
