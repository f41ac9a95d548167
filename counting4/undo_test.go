package counting4

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestUndoMatchesPerPosition: an exclusive filter with an undo block ends
// every Add and Remove with the same counters and the same changed mask as
// one without (the per-position steps), leaves the undo block disarmed
// with the block's words from before the change saved, and for a Remove
// of a key it does not hold stores nothing at all (an Add that changes
// nothing may save the block's words as they are).
func TestUndoMatchesPerPosition(t *testing.T) {
	for _, lay := range []Layout{Blocked512, Blocked1024} {
		t.Run(lay.String(), func(t *testing.T) {
			const counters = 1 << 12
			wa, wb := make([]uint64, counters/16), make([]uint64, counters/16)
			a, err := New(wa, lay, counters, 9)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := New(wb, lay, counters, 9)
			var block uint64
			var saved [16]uint64
			b.SetUndo(&Undo{Block: &block, Saved: &saved}, 3)
			var ca, da, ea, na, cb, db, eb, nb uint64
			ra := &Record{Changed: &ca, Doubt: &da, Word: &ea, New: &na}
			rb := &Record{Changed: &cb, Doubt: &db, Word: &eb, New: &nb}
			rng := rand.New(rand.NewPCG(1, uint64(lay)))
			nw := uint64(lay.BlockWords())
			var added []uint64
			armed := 0
			for i := range 20000 {
				ca, cb = 0, 0
				h := rng.Uint64()
				remove := len(added) > 0 && rng.IntN(3) == 0
				if remove && rng.IntN(4) > 0 {
					j := rng.IntN(len(added))
					h = added[j]
					added = slices.Delete(added, j, j+1)
				}
				pa, pb := a.Prepare(h), b.Prepare(h)
				first := pb.base >> 4
				before := slices.Clone(wb[first : first+nw])
				savedBefore := saved
				var oka, okb bool
				if remove {
					oka, okb = a.RemoveExcl(pa, ra), b.RemoveExcl(pb, rb)
				} else {
					a.AddExcl(pa, ra)
					b.AddExcl(pb, rb)
					oka, okb = true, true
					added = append(added, h)
				}
				switch {
				case oka != okb:
					t.Fatalf("op %d (remove %v): per-position says %v, undo block %v", i, remove, oka, okb)
				case !slices.Equal(wa, wb):
					t.Fatalf("op %d (remove %v): the counters differ", i, remove)
				case ca != cb:
					t.Fatalf("op %d (remove %v): changed mask %#x, undo block's %#x", i, remove, ca, cb)
				case db != 0 || eb != 0 || nb != 0:
					t.Fatalf("op %d: the undo block's change left doubt %#x, evidence %d/%#x", i, db, eb, nb)
				case block != 0:
					t.Fatalf("op %d: the undo block is still armed: %#x", i, block)
				}
				if !okb || cb == 0 {
					// An Add with every counter saturated may have saved
					// the block (undoAdd1024 decides nothing before it
					// arms): the words as they were, and disarmed.
					if saved != savedBefore && (remove || !slices.Equal(saved[:nw], before)) {
						t.Fatalf("op %d (remove %v, ok %v): a change of nothing wrote the undo block", i, remove, okb)
					}
					continue
				}
				armed++
				if !slices.Equal(saved[:nw], before) {
					t.Fatalf("op %d: the undo block saved %x, the block was %x", i, saved[:nw], before)
				}
			}
			if armed < 10000 {
				t.Fatalf("only %d changes went through the undo block", armed)
			}
		})
	}
}
