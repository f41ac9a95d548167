package counting4

import "testing"

// TestBlocked1024PositionsShareOneBlock: every position of a key lies in one
// 256-counter (128-byte) block, and blocks are spread over the filter.
func TestBlocked1024PositionsShareOneBlock(t *testing.T) {
	s := splitmix64(1024)
	pos := make([]uint64, MaxK)
	for _, counters := range []uint64{BlockCounters1024, BlockCounters1024 * 7, 1 << 40} {
		used := map[uint64]bool{}
		for i := 0; i < 2000; i++ {
			k := 1 + i%MaxK
			Blocked1024.Positions(s.next(), counters, k, pos)
			b := pos[0] / BlockCounters1024
			for j, p := range pos[:k] {
				if p/BlockCounters1024 != b || p >= counters {
					t.Fatalf("counters %d k %d: position %d = %d outside block %d", counters, k, j, p, b)
				}
			}
			used[b] = true
		}
		if want := min(counters/BlockCounters1024, 1000); uint64(len(used)) < want*6/10 {
			t.Errorf("counters %d: only %d distinct blocks for 2000 keys", counters, len(used))
		}
	}
}

// BenchmarkLayoutContainsLarge compares the layouts on a filter far larger
// than the caches (5M keys at 1%), where a lookup costs its cache misses.
func BenchmarkLayoutContainsLarge(b *testing.B) {
	const n = 5_000_000
	for _, l := range []Layout{Blocked512, Blocked1024, Classic} {
		c, k, err := l.Size(n, 0.01)
		if err != nil {
			b.Fatal(err)
		}
		f, _ := New(make([]uint64, (c+15)/16), l, c, k)
		s := splitmix64(1)
		for i := 0; i < n; i++ {
			f.Add(s.next(), nil)
		}
		qs := make([]uint64, 1<<20)
		for i := range qs {
			qs[i] = s.next()
		}
		b.Run(l.String(), func(b *testing.B) {
			b.ReportAllocs()
			hits := 0
			for i := 0; i < b.N; i++ {
				if f.Contains(qs[i&(len(qs)-1)]) {
					hits++
				}
			}
			_ = hits
		})
	}
}

// TestContainsProbeMatchesContains: the lazy probe answers exactly as
// Contains and as the per-counter definition over Positions (which Contains
// of the blocked layouts no longer uses) for every layout, on present and
// absent keys.
func TestContainsProbeMatchesContains(t *testing.T) {
	for _, l := range []Layout{Blocked512, Blocked1024, Classic, Partitioned} {
		c, k, err := l.Size(2000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := New(make([]uint64, (c+15)/16), l, c, k)
		s := splitmix64(7)
		for i := 0; i < 2000; i++ {
			f.Add(s.next(), nil)
		}
		s = splitmix64(7)
		for i := 0; i < 20000; i++ {
			h := s.next()
			p := f.Prepare(h)
			want := containsRef(f, h)
			if got := f.ContainsProbe(p); got != want {
				t.Fatalf("%v key %d: ContainsProbe %v, per-counter %v", l, i, got, want)
			}
			if got := f.Contains(h); got != want {
				t.Fatalf("%v key %d: Contains %v, per-counter %v", l, i, got, want)
			}
			if i < 2000 && !f.ContainsProbe(p) {
				t.Fatalf("%v: added key %d not found", l, i)
			}
		}
	}
}
