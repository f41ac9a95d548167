package recover

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// simUndoRun performs, store by store, what an exclusive writer with the
// undo block (counting4/undo.go) writes for op, until budget runs out, and
// returns the number of stores made (less than budget: the operation
// completed): the record's claim, the block's words saved, the undo block
// armed, the block's new words (an Add's in place, one store per counter
// it changes, as counting4's undoAdd1024 makes them; a Remove's word by
// word), the changed mask, the undo block disarmed, the item count, the record's finish. armFirst arms the undo
// block before the words are saved (the negative control: a writer killed
// in between leaves an armed block whose saved words are not the block's).
func simUndoRun(img *simImage, d header.FilterDesc, seed uint64, op simOp, budget int, armFirst bool) int {
	c := &simStores{budget: budget}
	step := c.step
	kh, pos := simKey(d, seed, op)
	lay := counting4.Layout(d.LayoutID)
	nw := uint64(lay.BlockWords())
	first := pos[0] >> 4 &^ (nw - 1)
	words := img.w[d.Offset/8:]
	blk := words[first : first+nw]
	nv := append([]uint64(nil), blk...)
	var mask uint64
	for j, p := range pos {
		wi, sh := p>>4-first, p&15*4
		switch v := nv[wi] >> sh & 15; {
		case v == 15:
			continue
		case op.add:
			nv[wi] += 1 << sh
		case v == 0:
			return c.n // not present: a Remove changes nothing
		default:
			nv[wi] -= 1 << sh
		}
		mask |= 1 << j
	}
	u := header.UndoAt(img.hot())
	u.Owner = uint64(op.slot) + 1 // (stored when the writer took the file)
	rec := header.RecordAt(img.hot(), op.slot, op.rec)
	items := &header.LineAt(img.hot(), op.filter).Items
	count := header.OpWord(rec.Op).Completed()
	typ, dir := uint64(header.OpAdd), uint64(1)
	if !op.add {
		typ, dir = header.OpRemove, ^uint64(0)
	}
	armed := uint64(op.filter)<<header.UndoEntryShift | (first + 1)
	if !step(func() { rec.Op = uint64(header.IdleOp(count).Begin(typ, op.filter)) }) || !step(func() { rec.Hash = kh }) {
		return c.n
	}
	if armFirst && !step(func() { u.Block = armed }) {
		return c.n
	}
	for i := range blk {
		if !step(func() { u.Saved[i] = blk[i] }) {
			return c.n
		}
	}
	if !armFirst && !step(func() { u.Block = armed }) {
		return c.n
	}
	if op.add {
		for _, p := range pos {
			wi, sh := p>>4-first, p&15*4
			if blk[wi]>>sh&15 == 15 {
				continue // saturated: stays
			}
			if !step(func() { blk[wi] += 1 << sh }) {
				return c.n
			}
		}
	} else {
		for i := range blk {
			if !step(func() { blk[i] = nv[i] }) {
				return c.n
			}
		}
	}
	_ = step(func() { rec.Changed = mask }) && step(func() { u.Block = 0 }) && step(func() { *items += dir }) &&
		step(func() { rec.Changed = 0 }) && step(func() { rec.Op = uint64(header.IdleOp(count + 1)) })
	return c.n
}

// TestInterruptUndoBlockEveryStore cuts an exclusive writer's adds and
// removes with the undo block at every store, for both blocked layouts,
// and checks that Repair ends each wholly applied or wholly undone, with
// the item count agreeing and the file clean. Its negative control arms
// the undo block before saving the words: some cut must then end neither
// way.
func TestInterruptUndoBlockEveryStore(t *testing.T) {
	keysN := 30
	if testing.Short() || raceEnabled {
		keysN = 8
	}
	for _, armFirst := range []bool{false, true} {
		bad := 0
		for _, lay := range []counting4.Layout{counting4.Blocked512, counting4.Blocked1024} {
			var base [][]byte
			for i := range 30 {
				base = append(base, []byte(fmt.Sprintf("base-%d", i)))
			}
			b0, d, seed := simBase(t, lay, 100, base)
			if m, err := header.Pick(b0[:2*header.MetaSize], int64(len(b0))); err != nil || m.Flags&header.FlagUndoBlock == 0 {
				t.Fatalf("the base file has no undo block (flags %#x, %v)", m.Flags, err)
			}
			for i := range keysN {
				for _, add := range []bool{true, false} {
					k := []byte(fmt.Sprintf("victim-%d", i))
					if !add {
						k = base[i%len(base)]
					}
					op := simOp{add: add, key: k, slot: 3, rec: 0}
					full := bytes.Clone(b0)
					total := simUndoRun(newSimImage(full), d, seed, op, 1<<30, armFirst)
					before, after := counterValues(b0, d), counterValues(full, d)
					for budget := 0; budget <= total; budget++ {
						img := bytes.Clone(b0)
						simUndoRun(newSimImage(img), d, seed, op, budget, armFirst)
						out, rb, ra := repairBytes(t, img)
						got := counterValues(out, d)
						exact := ra.State == Clean && len(rb.NeedsRebuild) == 0 && outcome(got, before, after) >= 0 &&
							ra.Filters[0].CounterSum == uint64(d.K)*ra.Filters[0].Items
						if exact {
							continue
						}
						if armFirst {
							bad++
							continue
						}
						dumpReport(t, rb)
						dumpReport(t, ra)
						t.Fatalf("%v add=%v key %q cut after %d of %d stores: after repair %s, counters before %v after %v, items %d sum %d",
							lay, add, k, budget, total, ra.State, outcome(got, before) == 0, outcome(got, after) == 0, ra.Filters[0].Items, ra.Filters[0].CounterSum)
					}
				}
			}
		}
		if armFirst && bad == 0 {
			t.Fatal("negative control: arming the undo block before saving the words left every cut exact")
		}
		t.Logf("armFirst=%v: %d cuts not exact", armFirst, bad)
	}
}
