package scaling

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
)

// TestFastPathMatchesGeneral runs one sequence of Adds and Removes (in
// order, late, repeated, absent, across growths) on two files: one through
// the straight paths of fastpath.go, one through ops.go's general path
// alone (a route hook wraps the writer, and setWriter then chooses the
// general path; the test checks each handle's choice). Every call must return the same error, and the
// files must hold the same bytes from the data region on (counters,
// changed maps, item counts, late-add index, page checksums) and the same
// Stats. The negative control: one more Add on one file only, which the
// comparison must flag.
func TestFastPathMatchesGeneral(t *testing.T) {
	requireFiles(t)
	for _, excl := range []bool{false, true} {
		t.Run(fmt.Sprintf("exclusive=%v", excl), func(t *testing.T) {
			dir := t.TempDir()
			routed := 0
			mk := func(name string, k *testknobs.Knobs) (*Filter, string) {
				p := filepath.Join(dir, name)
				f, err := Create(p, &Options{Capacity: 2000, ErrorRate: 0.01, Seed: 42, Exclusive: excl, knobs: k})
				if err != nil {
					t.Fatal(err)
				}
				return f, p
			}
			fast, fastPath := mk("fast", nil)
			gen, genPath := mk("general", &testknobs.Knobs{RouteHook: func(uint64) { routed++ }})
			// Each handle takes the path the comparison assumes (setWriter),
			// or the test would compare the general path with itself.
			want := map[bool]string{false: "sharedFast", true: "exclFast"}[excl]
			if p := pathOf(fast); !strings.HasSuffix(p, "."+want) {
				t.Fatalf("the straight handle's Adds run by %s, want %s", p, want)
			}
			if p := pathOf(gen); !strings.HasSuffix(p, ".modifySlow") {
				t.Fatalf("the route-hooked handle's Adds run by %s, want modifySlow", p)
			}
			both := func(what string, op func(f *Filter) error) {
				t.Helper()
				e1, e2 := op(fast), op(gen)
				if !errors.Is(e1, e2) && (e1 == nil || e2 == nil || e1.Error() != e2.Error()) {
					t.Fatalf("%s: straight path %v, general path %v", what, e1, e2)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			key := func(i int) []byte { return fmt.Appendf(nil, "key-%d", i) }
			type pair struct {
				k  int
				id uint64
			}
			var added []pair
			id := uint64(1000)
			for n := range 12000 {
				switch r := rng.IntN(100); {
				case r < 70: // in order
					id += uint64(rng.IntN(3))
					p := pair{n, id}
					both("add", func(f *Filter) error { return f.Add(key(p.k), p.id) })
					added = append(added, p)
				case r < 75 && id > 1500: // late: below the newest filter's range
					p := pair{n, id - 400 - uint64(rng.IntN(100))}
					both("late add", func(f *Filter) error { return f.Add(key(p.k), p.id) })
					added = append(added, p)
				case r < 80 && len(added) > 0: // repeated
					p := added[rng.IntN(len(added))]
					both("repeated add", func(f *Filter) error { return f.Add(key(p.k), p.id) })
					added = append(added, p)
				case r < 95 && len(added) > 0: // remove one added
					i := rng.IntN(len(added))
					p := added[i]
					added[i] = added[len(added)-1]
					added = added[:len(added)-1]
					both("remove", func(f *Filter) error { return f.Remove(key(p.k), p.id) })
				default: // remove an absent key
					p := pair{-n, id}
					both("remove absent", func(f *Filter) error { return f.Remove(key(p.k), p.id) })
				}
			}
			if routed == 0 {
				t.Fatal("the route hook never ran: the general file took no Add through ops.go")
			}
			sf, sg := fast.Stats(), gen.Stats()
			if len(sf.Filters) < 3 {
				t.Fatalf("%d filters: the sequence did not grow the chain", len(sf.Filters))
			}
			if fmt.Sprint(sf.Filters) != fmt.Sprint(sg.Filters) {
				t.Fatalf("Stats differ:\nstraight %+v\ngeneral  %+v", sf.Filters, sg.Filters)
			}
			flushClose := func(f *Filter) {
				if err := f.Flush(); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}
			flushClose(fast)
			flushClose(gen)
			if off := dataDiff(t, fastPath, genPath); off >= 0 {
				t.Fatalf("the files differ at byte %d", off)
			}
			// Negative control: one more Add on one file only.
			f, err := Open(fastPath, &OpenOptions{Exclusive: excl})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Add([]byte("one more"), id); err != nil {
				t.Fatal(err)
			}
			flushClose(f)
			if dataDiff(t, fastPath, genPath) < 0 {
				t.Fatal("negative control: an Add on one file only, and the comparison found no difference")
			}
		})
	}
}

// dataDiff returns the first offset from header.DataOffset on where the
// files at a and b differ (or their sizes do), -1 if none.
func dataDiff(t *testing.T, a, b string) int64 {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(x) != len(y) {
		return int64(min(len(x), len(y)))
	}
	foldCountLines(t, x)
	foldCountLines(t, y)
	x, y = x[header.DataOffset:], y[header.DataOffset:]
	if bytes.Equal(x, y) {
		return -1
	}
	for i := range x {
		if x[i] != y[i] {
			return int64(header.DataOffset + i)
		}
	}
	return -1
}

// foldCountLines makes every writer's count line of file image b its sum
// in the first word and zeros, and takes the checksum of the counts page
// again where the flush took one: which word of its line an operation
// counts in depends on the record it held (header.CountWord), which the
// two paths choose differently; the sums must agree.
func foldCountLines(t *testing.T, b []byte) {
	t.Helper()
	m := metaA(t, b)
	for _, d := range m.Filters {
		if !d.HasCounts() {
			continue
		}
		for s := range header.NumSlots {
			l := b[header.CountOffset(&d, s):][:header.CountSize]
			var sum uint64
			for w := range header.CountWords {
				sum += binary.LittleEndian.Uint64(l[8*w:])
				binary.LittleEndian.PutUint64(l[8*w:], 0)
			}
			binary.LittleEndian.PutUint64(l, sum)
		}
		if l, ok := d.SumLayout(); ok && m.Flags&header.FlagPageSums != 0 {
			p := (d.CountsOffset() - d.Offset) / header.PageSize
			if !header.ChangedIn(b[l.MapOffset:], p) {
				l.PutSumIn(b[l.MapOffset:], p, header.PageSum(b[d.CountsOffset():][:header.PageSize]))
			}
		}
	}
}

// pathOf names the function a handle's Adds and Removes go to (setWriter).
func pathOf(f *Filter) string {
	return runtime.FuncForPC(reflect.ValueOf(f.fast.op).Pointer()).Name()
}

// TestRemoveRoute: the fast paths' Remove route (removeRoute) takes a
// Remove only where the guessed filter's range alone holds its id: in a
// chain grown in order, for an id of each filter's range; never with a
// late-add index allocated, with the newest filter's min id at or below
// the frontier (a range widened as 1.0 did), with sealed ranges that
// overlap, or in a file 1.0 grew (filters without index regions, whose
// Adds widen as 1.0's did). The line words are set by hand, as another
// writer or an older library would have left them, and the chain is
// loaded again where the route reads what loadChain found.
func TestRemoveRoute(t *testing.T) {
	requireFiles(t)
	path := filepath.Join(t.TempDir(), "route.dbl")
	f, err := Create(path, &Options{Capacity: 100, GrowthFactor: 1, ErrorRate: 0.01, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 250 {
		if err := f.Add(fmt.Appendf(nil, "k%d", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	route := func(id uint64) bool {
		c := f.chain.Load()
		return removeRoute(c, c.f[c.guess(id)], id)
	}
	reload := func() {
		t.Helper()
		m, err := f.readMeta()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.loadChain(m); err != nil {
			t.Fatal(err)
		}
	}
	c := f.chain.Load()
	if len(c.f) != 3 || !c.disjoint {
		t.Fatalf("%d filters, disjoint %v: want 3 grown in order", len(c.f), c.disjoint)
	}
	lo := func(j int) *uint64 { return &c.f[j].line.MinID }
	hi := func(j int) uint64 { return atomic.LoadUint64(&c.f[j].line.MaxID) & header.MaxID }
	ids := []uint64{atomic.LoadUint64(lo(0)), hi(0), atomic.LoadUint64(lo(1)), hi(1), atomic.LoadUint64(lo(2)), hi(2)}
	for _, id := range ids {
		if !route(id) {
			t.Errorf("id %d (ranges %v): not the fast route", id, ids)
		}
	}
	if route(hi(2) + 1) {
		t.Errorf("id %d above every range: the fast route", hi(2)+1)
	}
	for _, tc := range []struct {
		name   string
		set    func() (undo func())
		reload bool // loadChain reads what set changed
	}{
		{"index allocated on filter 1", func() func() {
			atomic.StoreUint64(&c.f[1].line.Index, header.IndexAllocated)
			return func() { atomic.StoreUint64(&c.f[1].line.Index, header.IndexNone) }
		}, false},
		{"newest min id at the frontier", func() func() {
			old := atomic.LoadUint64(lo(2))
			atomic.StoreUint64(lo(2), hi(1))
			return func() { atomic.StoreUint64(lo(2), old) }
		}, false},
		{"sealed ranges overlap", func() func() {
			old := atomic.LoadUint64(lo(1))
			atomic.StoreUint64(lo(1), hi(0))
			return func() { atomic.StoreUint64(lo(1), old) }
		}, true},
	} {
		undo := tc.set()
		if tc.reload {
			reload()
		}
		for _, id := range ids {
			if route(id) {
				t.Errorf("%s: id %d takes the fast route", tc.name, id)
			}
		}
		undo()
		if tc.reload {
			reload()
		}
		c = f.chain.Load()
		for _, id := range ids {
			if !route(id) {
				t.Errorf("after %s undone: id %d not the fast route", tc.name, id)
			}
		}
	}

	// A sealed filter whose range was empty when the chain was loaded:
	// an Add that raced the seal (its max id swapped, its min id not yet)
	// gives it a range later. The frontier counts its max id, so Adds of
	// that id go to it or the index, never widen the newest over it (I8);
	// and the fast route, where it takes a Remove, takes it to the one
	// filter whose range holds the id. The race written out: widen's
	// stores around a real growth.
	h, err := Create(filepath.Join(t.TempDir(), "empty.dbl"), &Options{Capacity: 100, GrowthFactor: 1, ErrorRate: 0.01, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	hc := h.chain.Load()
	x := hc.f[len(hc.f)-1]
	const raced = 50
	atomic.StoreUint64(&x.line.MaxID, raced) // the raced Add's max id swap
	if err := h.grow(hc.end, growIndexFull); err != nil {
		t.Fatal(err)
	}
	atomic.StoreUint64(&x.line.MinID, raced) // its min id, after the seal
	for i := range 20 {
		if err := h.Add(fmt.Appendf(nil, "y%d", i), raced); err != nil {
			t.Fatal(err)
		}
	}
	hc = h.chain.Load()
	if only, n := inRange(hc, raced); n != 1 || only != x {
		t.Errorf("after a filter sealed with an empty range gained id %d: %d ranges hold it (frontier %d)", raced, n, hc.frontier)
	}
	if g := hc.f[hc.guess(raced)]; removeRoute(hc, g, raced) {
		if only, n := inRange(hc, raced); n != 1 || only != g {
			t.Errorf("id %d takes the fast route to filter %d, but %d ranges hold it", raced, g.idx, n)
		}
	}
	for i := range 20 {
		if err := h.Remove(fmt.Appendf(nil, "y%d", i), raced); err != nil {
			t.Errorf("Remove of y%d: %v", i, err)
		}
	}

	// A file 1.0 grew: its filters have no index regions.
	g, err := Open(copyFixture(t, "v10-retire.dbl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	gc := g.chain.Load()
	if gc.disjoint || len(gc.f) < 2 {
		t.Fatalf("1.0's file: %d filters, disjoint %v", len(gc.f), gc.disjoint)
	}
	for _, id := range []uint64{0, 150, 499} {
		if removeRoute(gc, gc.f[gc.guess(id)], id) {
			t.Errorf("1.0's file: id %d takes the fast route", id)
		}
		if err := g.Remove(fmt.Appendf(nil, "k%d", id), id); err != nil {
			t.Errorf("1.0's file: Remove of k%d: %v", id, err)
		}
	}
}
