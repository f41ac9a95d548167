package recover

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// hyp is one possible truth about an operation cut short, and what to do
// about it.
//
// By the record's protocol (I6, docs/PROTOCOLS.md) the truth is Changed or
// Changed^Doubt: the doubted compare-and-swap changed all its positions or
// none. A record whose Doubt is 0 and Changed is not 0 finished its
// counters, and its item count may or may not have been adjusted.
type hyp struct {
	rollback   uint64 // positions whose change is reverted
	complete   bool   // the operation counts as completed
	itemsDelta int64  // added to the item count
	contrib    int64  // what the operation added to sum − k×items under this hypothesis
}

// resolution is how Repair ends the cut-short operations on one filter.
type resolution struct {
	filter int
	exact  bool // every operation ends wholly applied or wholly undone, and the item count agrees
	// bounded: not exact, but ended as safely as exactness allows in a
	// filter with saturated counters (see resolve): every counter is
	// exact except that each doubted position may be one too high.
	bounded      bool
	itemsUnknown bool   // saturated counters: the item count cannot be checked
	recount      bool   // the item count is set from the counter sum afterwards
	why          string // why it is not exact
	choice       []hyp  // per record of the filter
	words        map[int64]uint64
	sumDelta     int64
	itemsDelta   int64
	rolledBack   int // operations that end undone (their changes reverted)
	completed    int // operations that end applied
	untouched    int // operations cut short before they changed a counter
	underflow    bool
}

// summary says how the cut-short operations end, naming only what happens:
// "ends 1 cut-short operation exactly: drops 1 that had changed no counter
// yet".
func (r *resolution) summary() string {
	s := "ends " + r.ending("exactly")
	if r.itemsUnknown {
		s += " (saturated counters hide whether the item count was adjusted; it is left as it is)"
	}
	return s
}

// boundedSummary says how a bounded resolution ends the operations.
func (r *resolution) boundedSummary() string {
	return "ends " + r.ending("safely") + "; each position whose change it cannot tell is left one too high at most, as " + r.why +
		": the filter's saturated counters already count high, so no false negative and nothing a Rebuild would restore"
}

// ending is "N cut-short operations <how>: rolls back …, completes …".
func (r *resolution) ending(how string) string {
	var parts []string
	if r.rolledBack > 0 {
		parts = append(parts, fmt.Sprintf("rolls back %d", r.rolledBack))
	}
	if r.completed > 0 {
		parts = append(parts, fmt.Sprintf("completes %d", r.completed))
	}
	if r.untouched > 0 {
		parts = append(parts, fmt.Sprintf("drops %d that had changed no counter yet", r.untouched))
	}
	n := r.rolledBack + r.completed + r.untouched
	return fmt.Sprintf("%d cut-short %s %s: %s", n, plural(n, "operation", "operations"), how, strings.Join(parts, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// hypsOf lists the possible truths of an in-flight record.
//
// The order of counting4's stores (I6) narrows them down. Changed gains a
// group's bits only after that group's compare-and-swap succeeded, and
// Doubt keeps the last group's bits until the next group (or the end)
// replaces them; so a Doubt inside Changed is stale: its CAS happened.
// The one exception is a Remove undoing its changes one position at a time
// (after it met a counter already at zero): there Doubt is the single
// position being restored, which is then the lowest bit left in Changed.
// Only a Doubt outside Changed, or one that may be that undo, is a real
// doubt.
func hypsOf(ri *recInfo) []hyp {
	d := ri.dir()
	c, db := ri.Changed, ri.Doubt
	switch {
	case db != 0 && db&^c == 0 && !ri.mayBeUndo():
		return []hyp{{rollback: c, contrib: d * int64(bits.OnesCount64(c))}}
	case db != 0:
		return []hyp{
			{rollback: c, contrib: d * int64(bits.OnesCount64(c))},
			{rollback: c ^ db, contrib: d * int64(bits.OnesCount64(c^db))},
		}
	case c != 0:
		return []hyp{
			{complete: true, itemsDelta: d, contrib: d * int64(bits.OnesCount64(c))},
			{complete: true, contrib: 0},
		}
	}
	return []hyp{{}}
}

// mayBeUndo reports whether the record's doubt may be a step of a Remove's
// undo (see hypsOf): the record is a Remove's, its doubt a single position,
// and no position of Changed lies below it.
func (r *recInfo) mayBeUndo() bool {
	return r.dir() < 0 && bits.OnesCount64(r.Doubt) == 1 && r.Changed&(r.Doubt-1) == 0
}

// safeHyp is the choice that can only leave counters too high, never too
// low: a false positive at worst, never a false negative.
func safeHyp(ri *recInfo) hyp {
	c, db := ri.Changed, ri.Doubt
	switch {
	case db != 0 && ri.dir() > 0:
		return hyp{rollback: c &^ db} // the doubtful increments stay
	case db != 0:
		return hyp{rollback: c | db} // the doubtful decrements are undone
	case c != 0:
		return hyp{complete: true}
	}
	return hyp{}
}

// narrow uses the evidence a record keeps of its last compare-and-swap (the
// counter word and the value it stores, written before the doubt mask, I6)
// to drop the hypotheses the word's current value rules out. It returns hs
// unchanged when the evidence is absent, does not fit the doubt, or the word
// has changed since (another writer touched it): the counter-sum identity
// then decides as before.
//
// For a real doubt of a forward compare-and-swap (bits outside Changed), the
// word holds either the new value (it happened: hs[1]) or the value without
// the doubted change (it did not: hs[0]). A remove whose doubt may be an undo
// step (see hypsOf) is read both ways, and only the conclusion both readings
// share is drawn: the word holds the value from before the doubted CAS, so
// the doubted restore did not happen and rolling back Changed (hs[0]) is
// right.
func narrow(img image, fi *filterInfo, ri *recInfo, hs []hyp) ([]hyp, error) {
	c, db := ri.Changed, ri.Doubt
	if len(hs) != 2 || db == 0 || ri.Word == 0 {
		return hs, nil
	}
	nwords := (fi.desc.Counters + 15) / 16
	w := ri.Word - 1
	if w >= nwords {
		return hs, nil
	}
	d := ri.dir()
	mayBeUndo := ri.mayBeUndo()
	// dir of the doubted CAS: +1 if it increments the doubt positions.
	dir := d
	if mayBeUndo && db&^c == 0 {
		dir = -d // an undo step restoring the position
	}
	var pos [header.MaxK]uint64
	counting4.Layout(fi.desc.LayoutID).Positions(ri.Hash, fi.desc.Counters, fi.desc.K, pos[:fi.desc.K])
	nv, without := ri.New, ri.New
	for m := db; m != 0; m &= m - 1 {
		p := pos[bits.TrailingZeros64(m)]
		if p>>4 != w {
			return hs, nil // the evidence is of another CAS
		}
		sh := (p & 15) * 4
		v := without >> sh & 15
		if dir > 0 {
			if v == 0 {
				return hs, nil
			}
			without -= 1 << sh
		} else {
			if v == 15 {
				return hs, nil
			}
			without += 1 << sh
		}
	}
	var buf [8]byte
	if err := readFull(img, buf[:], fi.desc.Offset+int64(w)*8); err != nil {
		return nil, err
	}
	switch cur := le.Uint64(buf[:]); {
	case cur == without:
		return hs[:1], nil
	case cur == nv && !mayBeUndo:
		return hs[1:], nil
	}
	return hs, nil
}

// maxCombos bounds the hypotheses tried.
const maxCombos = 1 << 16

// enumerate finds the combinations of hypotheses whose contributions add up
// to target, and returns how many distinct effects they have (stopping at
// 2; -1 if there are too many combinations to try) and the first. Two
// combinations have the same effect when they revert the same positions,
// complete the same operations and change the item count by the same amount
// (which record adjusted the count does not matter).
func enumerate(hs [][]hyp, target int64) (n int, first []hyp) {
	combos := 1
	for _, h := range hs {
		combos *= len(h)
		if combos > maxCombos {
			return -1, nil
		}
	}
	cur := make([]hyp, len(hs))
	effect := func(c []hyp) string {
		var b []byte
		var items int64
		for _, h := range c {
			b = fmt.Appendf(b, "%x/%v,", h.rollback, h.complete)
			items += h.itemsDelta
		}
		return fmt.Sprintf("%s%d", b, items)
	}
	var firstEffect string
	var walk func(i int, acc int64)
	walk = func(i int, acc int64) {
		if n >= 2 {
			return
		}
		if i == len(hs) {
			if acc != target {
				return
			}
			switch e := effect(cur); {
			case first == nil:
				first, firstEffect, n = slices.Clone(cur), e, 1
			case e != firstEffect:
				n = 2
			}
			return
		}
		for _, h := range hs[i] {
			cur[i] = h
			walk(i+1, acc+h.contrib)
		}
	}
	walk(0, 0)
	return n, first
}

// resolve decides how to end the operations dead writers left in flight on
// filter i, using the identity sum(counters) = k × items (exact while no
// counter is saturated) to tell which of each record's possible truths holds.
func (a *analysis) resolve(img image, i int) (*resolution, error) {
	fi := &a.filters[i]
	ev, err := a.evidence(img, fi)
	if err != nil {
		return nil, err
	}
	res := &resolution{filter: i}
	choice, bounded := res.choose(fi, ev)
	if choice != nil {
		exact, err := res.tryExact(img, fi, ev.recs, choice)
		if err != nil {
			return nil, err
		}
		if exact {
			return res, nil
		}
	}
	safe := make([]hyp, len(ev.recs))
	for j, ri := range ev.recs {
		safe[j] = safeHyp(ri)
	}
	*res = resolution{filter: i, why: res.why}
	if err := res.apply(img, fi, ev.recs, safe); err != nil {
		return nil, err
	}
	res.bounded = bounded && !res.underflow
	return res, nil
}

// recEvidence is what the records of a filter's interrupted operations
// say: each record, its possible states (hs), and those the counters as
// they are leave possible (nhs; narrowed if any is fewer).
type recEvidence struct {
	recs             []*recInfo
	hs, nhs          [][]hyp
	anyDoubt, narrow bool
}

// evidence gathers the records of filter fi's interrupted operations and
// their possible states.
func (a *analysis) evidence(img image, fi *filterInfo) (*recEvidence, error) {
	ev := &recEvidence{
		recs: make([]*recInfo, len(fi.recs)),
		hs:   make([][]hyp, len(fi.recs)),
		nhs:  make([][]hyp, len(fi.recs)),
	}
	for j, rr := range fi.recs {
		ri := &a.slots[rr.slot].recs[rr.rec]
		ev.recs[j], ev.hs[j] = ri, hypsOf(ri)
		ev.anyDoubt = ev.anyDoubt || ri.Doubt != 0
		nh, err := narrow(img, fi, ri, ev.hs[j])
		if err != nil {
			return nil, err
		}
		ev.nhs[j] = nh
		ev.narrow = ev.narrow || len(nh) < len(ev.hs[j])
	}
	return ev, nil
}

// choose picks the one combination of the records' states that the
// counters and the item count explain (nil if none can be told, with why
// set), or reports the filter bounded: its operations may end undone with
// their doubted changes left high.
func (res *resolution) choose(fi *filterInfo, ev *recEvidence) (choice []hyp, bounded bool) {
	k := int64(fi.desc.K)
	switch {
	case fi.sat == 0 && fi.itemsOK:
		target := int64(fi.sum) - k*int64(fi.items)
		n, first := enumerate(ev.nhs, target)
		if n == 0 && ev.narrow {
			// The evidence misled (another writer made the very change a
			// dead writer was about to make): weigh every hypothesis.
			n, first = enumerate(ev.hs, target)
		}
		switch n {
		case 1:
			return first, false
		case 0:
			res.why = fmt.Sprintf("no combination of the records' possible states explains the counter sum %d with %d items", fi.sum, fi.items)
		case -1:
			res.why = "too many records to weigh"
		default:
			res.why = fmt.Sprintf("several combinations of the records' possible states explain the counter sum %d with %d items", fi.sum, fi.items)
		}
	case !ev.anyDoubt:
		// Every record's counters are known; only the item count is not.
		choice = make([]hyp, len(ev.recs))
		for j, ri := range ev.recs {
			if ri.Changed != 0 {
				choice[j] = hyp{complete: true}
			}
		}
		if fi.sat == 0 {
			res.recount = true
		} else {
			res.itemsUnknown = true
		}
		return choice, false
	case fi.sat > 0 && fi.itemsOK:
		res.why = fmt.Sprintf("%d saturated counters hide the counter-sum identity", fi.sat)
		// The operations end undone with their doubted changes left high
		// (safeHyp): at most one too high at each doubted position, never
		// low. A filter with a saturated counter already counts high (15
		// stands for more adds than it counts and is never decremented),
		// and it never returns to the identity (a saturated counter
		// stays), so Rebuild would buy nothing its saturation has not
		// already given up: Repair accepts the ending (bounded) instead of
		// refusing the whole file until a Rebuild. The item count is right
		// as it is: it changes only after the counters (I6). (An item
		// count that cannot be right, itemsOK false, is damage beside
		// the cut operations: the default case, the filter for Rebuild.)
		return nil, true
	default:
		res.why = fmt.Sprintf("the item count %d is impossible", int64(fi.items))
	}
	return nil, false
}

// tryExact applies choice and reports whether the filter then satisfies
// its identities (exact); if not, why says which fails.
func (res *resolution) tryExact(img image, fi *filterInfo, recs []*recInfo, choice []hyp) (bool, error) {
	if err := res.apply(img, fi, recs, choice); err != nil {
		return false, err
	}
	k := int64(fi.desc.K)
	switch {
	case res.underflow:
		res.why = "rolling back would take a counter below zero"
	case res.recount && (int64(fi.sum)+res.sumDelta)%k != 0:
		res.why = fmt.Sprintf("the counter sum %d is not a multiple of k = %d", int64(fi.sum)+res.sumDelta, k)
	case fi.sat == 0 && !res.recount && int64(fi.sum)+res.sumDelta != k*(int64(fi.items)+res.itemsDelta):
		res.why = "the counter sum disagrees with the item count after the roll-back"
	default:
		res.exact = true
		return true, nil
	}
	return false, nil
}

// apply works out the counter words that choice changes. Reverting an
// increment leaves a saturated counter at 15 (it may stand for more adds than
// it counts) and never goes below zero.
func (res *resolution) apply(img image, fi *filterInfo, recs []*recInfo, choice []hyp) error {
	res.choice = choice
	res.words = map[int64]uint64{}
	lay := counting4.Layout(fi.desc.LayoutID)
	var pos [header.MaxK]uint64
	var buf [8]byte
	for j, ri := range recs {
		h := choice[j]
		res.itemsDelta += h.itemsDelta
		switch {
		case h.complete:
			res.completed++
		case ri.Changed != 0 || ri.Doubt != 0:
			res.rolledBack++
		default:
			res.untouched++
		}
		if h.rollback == 0 {
			continue
		}
		// The record holds the key hash of the filter (salted for native
		// filters, as keyHash computes it): positions come straight from it.
		lay.Positions(ri.Hash, fi.desc.Counters, fi.desc.K, pos[:fi.desc.K])
		for m := h.rollback; m != 0; m &= m - 1 {
			p := pos[bits.TrailingZeros64(m)]
			off := fi.desc.Offset + int64(p>>4)*8
			w, ok := res.words[off]
			if !ok {
				if err := readFull(img, buf[:], off); err != nil {
					return err
				}
				w = le.Uint64(buf[:])
			}
			sh := (p & 15) * 4
			v := w >> sh & 15
			switch {
			case v == 15:
			case ri.dir() > 0 && v == 0:
				res.underflow = true
			case ri.dir() > 0:
				w -= 1 << sh
				res.sumDelta--
			default:
				w += 1 << sh
				res.sumDelta++
			}
			res.words[off] = w
		}
	}
	return nil
}
