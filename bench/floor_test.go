package main

import (
	"fmt"
	"testing"

	"github.com/dablooms/dablooms/scaling"
)

// TestOursFloorIsTheFormat checks that ours-original-floor changes the
// counters the library's Add and Remove change, in the filter the library
// would pick: over a chain of two filters, every key the floor adds is
// found by the library's Contains on the same file, each id is routed to
// the filter whose id range (Stats) holds it, and after the floor removes
// every key the library finds none of them. The negative control adds
// with the first filter's salt off by one: the library must then miss
// most of that filter's keys.
func TestOursFloorIsTheFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("grows a chain of two filters (about 2 s)")
	}
	const n = 1_000_000 + 20_000 // the original's configuration: two filters
	key := func(i int) []byte { return []byte(fmt.Sprintf("key-%012d", i)) }
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			s, err := newOursFloor(buildConfig{n: n, dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			fl := s.(*oursFloor)
			defer func() {
				if err := fl.close(); err != nil {
					t.Error(err)
				}
			}()
			if fl.filters() != 2 {
				t.Fatalf("the setup grew %d filters, want 2", fl.filters())
			}
			if broken {
				fl.chain[0].salt++
			}
			for i := range n {
				if err := fl.add(key(i), uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			lib, err := scaling.Open(fl.path, &scaling.OpenOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer lib.Close()
			const step = 17
			missed, asked := 0, 0
			for i := 0; i < n; i += step {
				asked++
				if !lib.Contains(key(i)) {
					missed++
				}
			}
			if broken {
				if missed < asked/2 {
					t.Errorf("negative control: with the wrong salt the library still found %d of %d keys", asked-missed, asked)
				}
				return
			}
			if missed != 0 {
				t.Fatalf("the library missed %d of %d keys the floor added", missed, asked)
			}
			st := lib.Stats().Filters
			for i := 0; i < n; i += step {
				id := uint64(i)
				j := len(fl.chain) - 1
				for j > 0 && id < fl.chain[j].first {
					j--
				}
				if id < st[j].FirstID || id > st[j].LastID {
					t.Fatalf("id %d routed to filter %d, whose range is [%d, %d]", id, j, st[j].FirstID, st[j].LastID)
				}
			}
			for i := range n {
				if err := fl.remove(key(i), uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			found := 0
			for i := 0; i < n; i += step {
				if lib.Contains(key(i)) {
					found++
				}
			}
			if found != 0 {
				t.Errorf("after the floor removed every key the library still found %d of %d", found, asked)
			}
		})
	}
}

// TestOursFloorCASIsTheFloor checks that ours-original-floor-cas leaves
// every word as ours-original-floor does: the same keys added to both
// (twenty times each for some, so counters saturate), then half removed;
// the counter words must be equal after each step. The negative control
// changes one word of the CAS floor: the comparison must see it.
func TestOursFloorCASIsTheFloor(t *testing.T) {
	const n = 20_000
	build := func(b buildConfig) *oursFloor {
		s, err := newOursFloor(b)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.close() })
		return s.(*oursFloor)
	}
	plain := build(buildConfig{n: n, dir: t.TempDir()})
	cs, err := newOursFloorCAS(buildConfig{n: n, dir: t.TempDir(), rep: 1})
	if err != nil {
		t.Fatal(err)
	}
	withCAS := cs.(oursFloorCAS)
	t.Cleanup(func() { withCAS.close() })
	withCAS.seed = plain.seed // each file has its own seed
	if len(plain.chain) != len(withCAS.chain) {
		t.Fatalf("chains of %d and %d filters", len(plain.chain), len(withCAS.chain))
	}
	same := func(step string) bool {
		for i := range plain.chain {
			a, b := plain.chain[i].w, withCAS.chain[i].w
			for j := range a {
				if a[j] != b[j] {
					t.Logf("%s: filter %d word %d: floor %#x, floor-cas %#x", step, i, j, a[j], b[j])
					return false
				}
			}
		}
		return true
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "key-%012d", i) }
	for i := range n {
		reps := 1
		if i%1000 == 0 {
			reps = 20
		}
		for range reps {
			plain.add(key(i), uint64(i))
			withCAS.add(key(i), uint64(i))
		}
	}
	if !same("after the adds") {
		t.Fatal("the CAS floor's adds differ from the floor's")
	}
	for i := 0; i < n; i += 2 {
		plain.remove(key(i), uint64(i))
		withCAS.remove(key(i), uint64(i))
	}
	if !same("after the removes") {
		t.Fatal("the CAS floor's removes differ from the floor's")
	}
	withCAS.chain[0].w[7] ^= 1
	if same("negative control") {
		t.Fatal("negative control: a changed word went unseen")
	}
}
