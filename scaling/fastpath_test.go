package scaling

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
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

// pathOf names the function a handle's Adds and Removes go to (setWriter).
func pathOf(f *Filter) string {
	return runtime.FuncForPC(reflect.ValueOf(f.fast.op).Pointer()).Name()
}
