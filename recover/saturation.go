package recover

import (
	"math"

	"github.com/dablooms/dablooms/header"
)

// The plausibility test of saturated counters (docs/FORMAT.md, "Saturated
// counters: what Verify believes"). It needs no checksum, so it covers files
// of every format version, and it is a second line of defence for the
// others.
//
// A run of saturated counters. The counters are cut into units of 256
// counters (128 bytes, 16 counter words): a blocked1024 block, two blocked512
// blocks, 256 consecutive classic or partitioned counters. Every layout
// places each key's counters by hashing, independently of the other keys,
// and each unit is hit by the same rule as any other (a blocked key picks
// its block by fastrange of a fresh hash, a classic or partitioned position
// is uniform over the filter or its partition), so whatever the keys, the
// number of times each was added and removed, and the order, the units are
// exchangeable: given that F of the N units are full (all 256 counters at
// 15), every placement of those F among the N is equally likely. Under that
// null hypothesis the chance that r given consecutive units are all full is
// F/N · (F−1)/(N−1) · … · (F−r+1)/(N−r+1) ≤ (F/N)^r, and the chance that some
// run of r full units exists is at most N − r + 1 times that. A run whose
// bound is below satRunAlarm is damage: bytes written over the counters
// (0xFF pages), not anything Add and Remove leave. The test holds for any
// legitimate state, hot keys, a full filter, or a filter saturated by keys
// added more than 15 times and removed again (saturated counters never come
// down, so such a filter can end with most units full: then F is close to
// N and no run is improbable). A filter whose every unit is full cannot be
// told from one overwritten whole; the count test below still notes it.
//
// The count test. Without Removes each saturated counter holds at least 15
// of the filter's k × items increments, so saturated ≤ k × items / 15; a
// Remove of a key whose counters are saturated takes its item away and
// leaves the counters at 15, so a filter whose application removes keys it
// added more than 15 times can pass that bound legitimately. Passing it is
// therefore a note (state clean) that says what it means, not damage.

// satUnitWords is the number of 64-bit counter words in a unit.
const satUnitWords = 16

// satRunAlarm bounds the probability, under the null hypothesis above, of
// a run Verify calls damage: one false alarm in a billion verified filters
// at most.
const satRunAlarm = 1e-9

// maxSatRuns bounds the runs of full units remembered per filter; the rest
// are counted.
const maxSatRuns = 4096

// satRun is a maximal run of full units: the byte offset in the file of its
// first counter and its length in units.
type satRun struct {
	off   int64
	units uint64
}

// satScan collects a filter's full units as readCounters reads its counters
// in order, a chunk at a time (chunkSize is a multiple of a unit).
type satScan struct {
	limit   int64  // words in whole units: the words the scan looks at
	units   uint64 // whole units
	full    uint64 // full units
	run     satRun // the run being read (units 0: none)
	runs    []satRun
	dropped uint64 // runs of 2 or more units not kept in runs
}

// start prepares the scan of a filter of counters counters.
func (s *satScan) start(counters uint64) {
	*s = satScan{limit: int64(counters/(16*satUnitWords)) * satUnitWords}
}

// chunk takes the counter words read from word wi (index within the
// filter, a multiple of satUnitWords) on, at byte offset off of the file.
// Chunks come in order. Most units are told apart from full ones by their
// first word.
func (s *satScan) chunk(b []byte, wi, off int64) {
	const unitBytes = 8 * satUnitWords
	for j := int64(0); j+unitBytes <= int64(len(b)) && wi+j/8 < s.limit; j += unitBytes {
		s.units++
		if !allOnes(b[j : j+unitBytes]) {
			s.endRun()
			continue
		}
		s.full++
		if s.run.units == 0 {
			s.run.off = off + j
		}
		s.run.units++
	}
}

// allOnes reports whether every byte of b (a unit) is 0xFF.
func allOnes(b []byte) bool {
	for j := 0; j+8 <= len(b); j += 8 {
		if le.Uint64(b[j:]) != math.MaxUint64 {
			return false
		}
	}
	return true
}

// endRun closes the run being read; finish closes the last one.
func (s *satScan) endRun() {
	if s.run.units >= 2 {
		if len(s.runs) < maxSatRuns {
			s.runs = append(s.runs, s.run)
		} else {
			s.dropped++
		}
	}
	s.run = satRun{}
}

func (s *satScan) finish() { s.endRun() }

// runChance bounds the probability that a filter of n units, f of them
// full, holds a run of r full units when the full units lie wherever
// hashing put them: (n − r + 1) · f/n · (f−1)/(n−1) · … · (f−r+1)/(n−r+1).
func runChance(n, f, r uint64) float64 {
	if r == 0 || r > f || f > n {
		return 1
	}
	lg := math.Log(float64(n - r + 1))
	for j := range r {
		lg += math.Log(float64(f-j)) - math.Log(float64(n-j))
	}
	return math.Exp(lg)
}

// maxSatFindings bounds the findings of runs per filter; the rest are
// summed up in one more.
const maxSatFindings = 8

// checkSaturation applies both tests to each filter whose counters were
// read. A run is damage: the filter is listed for Rebuild, which zeroes it
// and adds its keys again (a saturated counter is never decremented, so
// nothing else brings the overwritten counters back down).
func (a *analysis) checkSaturation() {
	for i := range a.filters {
		fi := &a.filters[i]
		if fi.cut {
			continue
		}
		s := &fi.satScan
		var bad []satRun
		for _, r := range s.runs {
			if runChance(s.units, s.full, r.units) < satRunAlarm {
				bad = append(bad, r)
			}
		}
		for j, r := range bad {
			if j == maxSatFindings {
				a.note(Damaged, a.entry(i), -1, r.off, "counters", header.ErrCorrupt,
					"%d more runs of saturated counters like the ones above, the first here; the filter needs Rebuild", len(bad)-j)
				break
			}
			a.note(Damaged, a.entry(i), -1, r.off, "counters", header.ErrCorrupt,
				"%d bytes (%d counters) from here are all saturated (15), a run that hashing does not make (%d of the filter's %d blocks of 256 counters are all saturated; a run of %d by chance has probability below %.0e): something wrote over the counters, and the filter may answer wrongly; Repair cannot bring saturated counters down: rebuild the filter from the application's data (dabloomsctl repair --rebuild-from KEYS)",
				r.units*8*satUnitWords, r.units*16*satUnitWords, s.full, s.units, r.units, satRunAlarm)
		}
		if len(bad) > 0 {
			a.needRebuild[i] = true
			continue
		}
		a.noteSaturatedCount(i)
	}
}

// noteSaturatedCount notes a filter with more saturated counters than its
// Adds can have made (the count test above).
func (a *analysis) noteSaturatedCount(i int) {
	fi := &a.filters[i]
	if fi.sat == 0 || !fi.lineOK || !fi.itemsOK || a.anyLive {
		return
	}
	k := uint64(fi.desc.K)
	if fi.sat*15 <= k*fi.items+15*k {
		return
	}
	a.note(Clean, a.entry(i), -1, fi.desc.Offset, "counters", nil,
		"%d saturated counters, more than the %d × %d increments of the filter's items can have made (each saturated counter took 15): either keys added more than 15 times were removed again (a saturated counter never comes down), or something wrote over the counters; if the application never removes such keys, rebuild the filter from its data (dabloomsctl repair --rebuild-from KEYS)",
		fi.sat, k, fi.items)
}

// A chunk of counters read at once holds whole units (checked at compile
// time).
var _ = [1]struct{}{}[chunkSize%(8*satUnitWords)]
