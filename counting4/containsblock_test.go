package counting4

import (
	"fmt"
	"testing"
)

// containsRef is the per-counter definition of Contains: the key's
// positions (Positions) are all non-zero (Get).
func containsRef(f *Filter, h uint64) bool {
	pos := make([]uint64, f.K())
	f.Positions(h, pos)
	for _, c := range pos {
		if f.Get(c) == 0 {
			return false
		}
	}
	return true
}

// setCounter sets counter c to v (0..15) without touching its neighbours.
func setCounter(f *Filter, c uint64, v uint64) {
	sh := (c & 15) * 4
	f.words[c>>4] = f.words[c>>4]&^(15<<sh) | v<<sh
}

// TestContainsBlockCounterValues: ContainsProbe and Contains of the blocked
// layouts (containsBlock) agree with the per-counter definition when the
// key's counters and their neighbours in the block are 0, 1 or 15 (or
// random), with a zero at each of the key's positions in turn. Every nibble
// position of a word must have been tested at each of 0, 1 and 15.
func TestContainsBlockCounterValues(t *testing.T) {
	type fill struct{ key, rest uint64 } // nibble values; 16: random 1..15
	cases := []struct {
		name string
		fill fill
		zero bool // set the key's counter j to 0, for each j
	}{
		{"key 1, rest 0", fill{1, 0}, false},
		{"key 15, rest 0", fill{15, 0}, false},
		{"key 1, rest 15", fill{1, 15}, false},
		{"key random, rest 0", fill{16, 0}, false},
		{"key 1 but one 0, rest 15", fill{1, 15}, true},
		{"key 15 but one 0, rest 15", fill{15, 15}, true},
		{"key 15 but one 0, rest 1", fill{15, 1}, true},
		{"key random but one 0, rest random", fill{16, 16}, true},
	}
	for _, l := range []Layout{Blocked512, Blocked1024} {
		for _, k := range []int{1, 2, 6, 8, 9, 10, 17, 18, 33, MaxK} {
			var seen [16]uint16 // bit v: a key's counter at this nibble tested at value v
			for _, tc := range cases {
				t.Run(fmt.Sprintf("%v/k=%d/%s", l, k, tc.name), func(t *testing.T) {
					bs := l.blockSize()
					f, err := New(make([]uint64, 3*bs/16), l, 3*bs, k)
					if err != nil {
						t.Fatal(err)
					}
					r := splitmix64(uint64(k)<<8 | uint64(l))
					value := func(v uint64) uint64 {
						if v == 16 {
							return 1 + r.next()%15
						}
						return v
					}
					pos := make([]uint64, k)
					for i := 0; i < 200; i++ {
						h := r.next()
						f.Positions(h, pos)
						zeros := []int{-1}
						if tc.zero {
							zeros = zeros[:0]
							for j := range pos {
								zeros = append(zeros, j)
							}
						}
						for _, z := range zeros {
							for c := pos[0] / bs * bs; c < (pos[0]/bs+1)*bs; c++ {
								setCounter(f, c, value(tc.fill.rest))
							}
							for _, c := range pos {
								setCounter(f, c, value(tc.fill.key))
							}
							if z >= 0 {
								setCounter(f, pos[z], 0)
							}
							want := containsRef(f, h)
							if want != (z < 0) {
								t.Fatalf("key %d: reference %v with zero at %d", i, want, z)
							}
							if got := f.ContainsProbe(f.Prepare(h)); got != want {
								t.Fatalf("key %d, zero at %d: ContainsProbe %v, want %v", i, z, got, want)
							}
							if got := f.Contains(h); got != want {
								t.Fatalf("key %d, zero at %d: Contains %v, want %v", i, z, got, want)
							}
							for _, c := range pos {
								seen[c&15] |= 1 << f.Get(c)
							}
						}
					}
				})
			}
			if k < 6 {
				continue // too few positions to reach every nibble
			}
			for n, s := range seen {
				if want := uint16(1<<0 | 1<<1 | 1<<15); s&want != want {
					t.Errorf("%v k=%d: nibble %d tested at values %016b, want at least %016b", l, k, n, s, want)
				}
			}
		}
	}
}

// FuzzContainsBlock: ContainsProbe and Contains of the blocked layouts
// (containsBlock) agree with the per-counter definition on any counter
// values. Every counter starts at fill; edits are byte pairs (which counter,
// its new value in the low nibble): even pairs pick one of the key's
// counters, odd pairs any counter of its block.
func FuzzContainsBlock(f *testing.F) {
	f.Add(uint64(1), uint8(6), false, uint8(1), []byte{})
	f.Add(uint64(2), uint8(6), true, uint8(15), []byte{3, 0})
	f.Add(uint64(3), uint8(63), true, uint8(1), []byte{0, 0, 1, 15, 2, 0})
	f.Add(uint64(4), uint8(9), false, uint8(0), []byte{0, 1, 1, 1, 2, 1, 3, 1, 4, 1, 5, 1, 6, 1, 7, 1, 8, 1})
	f.Fuzz(func(t *testing.T, h uint64, k uint8, big bool, fill uint8, edits []byte) {
		l := Blocked512
		if big {
			l = Blocked1024
		}
		bs := l.blockSize()
		fl, err := New(make([]uint64, 2*bs/16), l, 2*bs, 1+int(k)%MaxK)
		if err != nil {
			t.Fatal(err)
		}
		for i := range fl.words {
			fl.words[i] = uint64(fill&15) * 0x1111111111111111
		}
		pos := make([]uint64, fl.K())
		fl.Positions(h, pos)
		for i := 0; i+1 < len(edits); i += 2 {
			c := pos[int(edits[i])%len(pos)]
			if i/2%2 == 1 {
				c = pos[0]/bs*bs + uint64(edits[i])%bs
			}
			setCounter(fl, c, uint64(edits[i+1]&15))
		}
		want := containsRef(fl, h)
		if got := fl.ContainsProbe(fl.Prepare(h)); got != want {
			t.Fatalf("ContainsProbe %v, per-counter %v", got, want)
		}
		if got := fl.Contains(h); got != want {
			t.Fatalf("Contains %v, per-counter %v", got, want)
		}
	})
}
