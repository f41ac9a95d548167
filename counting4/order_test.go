package counting4

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dablooms/dablooms/header"
)

func TestUnfmix64(t *testing.T) {
	if fmixInv1*0xff51afd7ed558ccd != 1 || fmixInv2*0xc4ceb9fe1a85ec53 != 1 {
		t.Fatalf("the inverses are wrong: %#x, %#x", fmixInv1, fmixInv2)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, x := range append([]uint64{0, 1, ^uint64(0), 1 << 63}, rng.Uint64(), rng.Uint64(), rng.Uint64()) {
		if got := unfmix64(header.Fmix64(x)); got != x {
			t.Errorf("unfmix64(Fmix64(%#x)) = %#x", x, got)
		}
	}
}

// TestPrepareOrder: PrepareOrder(Order(h)) is Prepare(h) for every
// layout, and for the blocked layouts keys sorted by Order are sorted by
// block.
func TestPrepareOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, l := range []Layout{Classic, Partitioned, Blocked512, Blocked1024} {
		counters := uint64(1 << 20)
		if l == Partitioned {
			counters = 7 << 17
		}
		f, err := New(make([]uint64, counters/16), l, counters, 7)
		if err != nil {
			t.Fatal(err)
		}
		if f.Sweeps() != (l == Blocked512 || l == Blocked1024) {
			t.Errorf("%v: Sweeps() = %v", l, f.Sweeps())
		}
		os := make([]uint64, 5000)
		for i := range os {
			h := rng.Uint64()
			os[i] = f.Order(h)
			gh, p := f.PrepareOrder(os[i])
			if want := f.Prepare(h); gh != h || p != want {
				t.Fatalf("%v: PrepareOrder(Order(%#x)) = %#x, %+v; want %#x, %+v", l, h, gh, p, h, want)
			}
		}
		if !f.Sweeps() {
			continue
		}
		slices.Sort(os)
		last := uint64(0)
		for _, o := range os {
			_, p := f.PrepareOrder(o)
			if p.base < last {
				t.Fatalf("%v: a block before the last one in Order's order: %d < %d", l, p.base, last)
			}
			last = p.base
		}
	}
}
