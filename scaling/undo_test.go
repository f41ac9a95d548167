package scaling

import (
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/dablooms/dablooms/header"
)

// deadExclusiveWriter leaves the file at path as an exclusive writer killed
// in the middle of a block's change leaves it: frozen for writers, the
// undo block armed with the block's words saved, and the block half
// changed (its first words scribbled). It returns the block's words
// before the change.
func deadExclusiveWriter(t *testing.T, path string) (entry int, first uint64, before []uint64) {
	t.Helper()
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := f.chain.Load().f[0]
	pos := make([]uint64, m.cf.K())
	m.cf.Positions(HashKey(f.params.Seed, []byte("victim"))+m.salt, pos)
	n := uint64(m.cf.Layout().BlockWords())
	first = pos[0] >> 4 &^ (n - 1)
	words := m.cf.Words()[first : first+n]
	before = slices.Clone(words)
	u := header.UndoAt(f.hot)
	copy(u.Saved[:], before)
	atomic.StoreUint64(&u.Owner, 4)
	// Killed between its changed mask and the disarm: the record says
	// changed, the block is armed.
	atomic.StoreUint64(&header.RecordAt(f.hot, 3, 0).Changed, 0xff)
	atomic.StoreUint64(&u.Block, uint64(m.idx)<<header.UndoEntryShift|(first+1))
	for i := range n / 2 {
		atomic.StoreUint64(&words[i], ^before[i])
	}
	atomic.StoreUint64(f.replaced, header.ReplaceFreezing)
	return m.idx, first, before
}

// TestUndoBlockOfADeadWriter: a block a dead exclusive writer left armed
// is stored back by whoever lets the other writers go on first: a writer
// that thaws the file, or a rewrite's Freeze (before it reads the file;
// its Abort lets the writers go on). Each leaves the block as it was, the
// record's changed mask (stored just before the writer died) zero, and the
// undo block disarmed.
func TestUndoBlockOfADeadWriter(t *testing.T) {
	requireFiles(t)
	for _, how := range []string{"thaw", "freeze-abort"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dead.dbl")
			f, err := Create(path, &Options{Capacity: 10_000, ErrorRate: 0.01})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 1000 {
				if err := f.Add([]byte{byte(i), byte(i >> 8)}, uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			f.Close()
			_, first, before := deadExclusiveWriter(t, path)
			switch how {
			case "thaw":
				w, err := Open(path, &OpenOptions{AllowUnclean: true})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				if !w.thawIfDead() {
					t.Fatal("the file was not thawed")
				}
			case "freeze-abort":
				fz, err := Freeze(path, 0)
				if err != nil {
					t.Fatal(err)
				}
				fz.Abort()
			}
			g, err := Open(path, &OpenOptions{AllowUnclean: true, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			m := g.chain.Load().f[0]
			got := m.cf.Words()[first : first+uint64(len(before))]
			if !slices.Equal(got, before) {
				t.Fatalf("the block is %x, was %x before the dead writer's change", got, before)
			}
			u := header.UndoAt(g.hot)
			if b, r := atomic.LoadUint64(&u.Block), atomic.LoadUint64(g.replaced); b != 0 || r != header.ReplaceNone {
				t.Fatalf("after the %s the undo block is %#x, the replaced word %d", how, b, r)
			}
			if c := atomic.LoadUint64(&header.RecordAt(g.hot, 3, 0).Changed); c != 0 {
				t.Fatalf("after the %s the record still says positions %#x changed, over the block as before", how, c)
			}
		})
	}
}
