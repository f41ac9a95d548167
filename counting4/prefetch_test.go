package counting4

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestContainsProbeEveryK: ContainsProbe answers as Contains for every k
// (one state word, several, a partial last one) at several fills, so that
// absent keys meet their first zero counter in every chunk; PrefetchProbe
// changes nothing.
func TestContainsProbeEveryK(t *testing.T) {
	for _, l := range []Layout{Blocked512, Blocked1024, Classic, Partitioned} {
		for _, k := range []int{1, 2, 7, 8, 9, 10, 16, 17, 18, 19, 27, 33, MaxK} {
			for _, perBlock := range []int{2, 10, 40} {
				t.Run(fmt.Sprintf("%v/k=%d/keys-per-block=%d", l, k, perBlock), func(t *testing.T) {
					const blocks = 64
					counters := uint64(blocks * BlockCounters1024)
					if l == Partitioned {
						counters = counters / uint64(k) * uint64(k)
					}
					f, err := New(make([]uint64, (counters+15)/16), l, counters, k)
					if err != nil {
						t.Fatal(err)
					}
					s := splitmix64(uint64(k*100 + perBlock))
					n := blocks * perBlock
					for i := 0; i < n; i++ {
						f.Add(s.next(), nil)
					}
					s = splitmix64(uint64(k*100 + perBlock))
					for i := 0; i < 4000; i++ {
						h := s.next()
						p := f.Prepare(h)
						f.PrefetchProbe(p)
						got, want := f.ContainsProbe(p), f.Contains(h)
						if got != want {
							t.Fatalf("key %d: ContainsProbe %v, Contains %v", i, got, want)
						}
						if i < n && !got {
							t.Fatalf("added key %d not found", i)
						}
					}
				})
			}
		}
	}
}

// TestPrepareProbes: PrepareProbes prepares as Prepare, and ContainsProbes
// sets exactly the elements whose ContainsProbe is true and leaves the others.
func TestPrepareProbes(t *testing.T) {
	for _, l := range []Layout{Blocked512, Blocked1024, Classic, Partitioned} {
		for _, k := range []int{3, 8, 9, 12} {
			counters := uint64(64 * BlockCounters1024)
			if l == Partitioned {
				counters = counters / uint64(k) * uint64(k)
			}
			f, err := New(make([]uint64, (counters+15)/16), l, counters, k)
			if err != nil {
				t.Fatal(err)
			}
			s := splitmix64(uint64(k))
			for i := 0; i < 1000; i++ {
				f.Add(s.next(), nil)
			}
			s = splitmix64(uint64(k))
			hs := make([]uint64, 3000)
			for i := range hs {
				hs[i] = s.next()
			}
			for _, n := range []int{0, 1, 7, 8, 9, 3000} {
				ps := make([]Probe, n)
				f.PrepareProbes(hs[:n], ps)
				found := make([]bool, n+1)
				for i := range found {
					found[i] = i%7 == 3
				}
				f.ContainsProbes(ps, found)
				for i := range n {
					if ps[i] != f.Prepare(hs[i]) {
						t.Fatalf("%v k=%d: PrepareProbes %+v, Prepare %+v", l, k, ps[i], f.Prepare(hs[i]))
					}
					if want := i%7 == 3 || f.Contains(hs[i]); found[i] != want {
						t.Fatalf("%v k=%d: key %d: ContainsProbes %v, want %v", l, k, i, found[i], want)
					}
				}
				if found[n] != (n%7 == 3) {
					t.Fatalf("%v k=%d: ContainsProbes changed found past ps", l, k)
				}
			}
		}
	}
}

// TestProbeLayoutForAssembly pins the Probe layout that prefetchProbes1/2
// (prefetch_amd64.s, prefetch_arm64.s) read: base at byte 8, 24 bytes per
// probe. A changed Probe would make them prefetch the wrong lines without
// changing any answer, so only this test would notice.
func TestProbeLayoutForAssembly(t *testing.T) {
	if off, size := unsafe.Offsetof(Probe{}.base), unsafe.Sizeof(Probe{}); off != 8 || size != 24 {
		t.Fatalf("Probe: base at %d, size %d; the assembly expects 8 and 24", off, size)
	}
}
