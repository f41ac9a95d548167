// Command walkfloor times the Blocked1024 walk of an absent-key lookup,
// written out, against variants of the arithmetic before it and against
// blobloom's lookup, in one loop over one heap array: what the file
// format's derivation of the block costs, apart from the library's code
// around it (docs/PERFORMANCE.md, "Absent single lookups in the
// comparison tool").
//
//	cd bench && go run ./walkfloor -n 10000000
//
// The array has as many counters as the first filter of an n-key store at
// 1 % (scaling.Options{Capacity: n, ErrorRate: 0.01}: 14.8 per key, k = 8),
// a fraction -fill of them non-zero (41 % in that file); the keys are the
// comparison tool's absent keys ("absent-%012d"), shuffled. Variants:
//
//	format     the file's walk: g = Fmix64(HashKey(seed, key) + salt),
//	           block = fastrange(g), state s = Fmix64(g ^ golden)
//	nomix      the block from the salted hash itself (no Fmix64 on the
//	           block's path), s = Fmix64(h ^ golden): not the format
//	nomix+lat  nomix with a chain as long as the Fmix64 put back on the
//	           block's path, adding nothing (h + Fmix64(h)&zero): the
//	           latency alone
//	touch      format, loading the block's two lines as soon as its
//	           address is known, before the state is mixed
//	cheap      no mixing at all: block = fastrange(h), s = h·golden, with
//	           h the salted hash (one multiply on either path): a
//	           derivation a new layout could use, not the format
//	blobloom   blobloom's Has (one 64-byte block, k-1 bit tests) over a
//	           bit array of the same size, -fill of its bits set, keys
//	           hashed with xxhash.Sum64
//	blobnib    blobloom's addressing and tests (xxhash.Sum64, one 64-byte
//	           block, k-1 double-hashed positions) over the nibble counters
//	           instead of bits
//
// -only picks variants (a comma list), -rounds repeats them alternated.
package main

import (
	"flag"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

const golden = 0x9E3779B97F4A7C15 // counting4's (part of the format)

// zero is a variable so that the compiler cannot fold x&zero away.
var zero uint64

type arrays struct {
	w      []uint64 // nibble counters, Blocked1024 blocks of 16 words
	blocks uint64
	b      [][8]uint64 // blobloom's 512-bit blocks, same bytes
	seed   uint64
	salt   uint64
}

// fileShape returns the counters and k of the one filter of an n-key store
// at 1 %, as the comparison tool's ours-file creates it.
func fileShape(n int) (counters uint64, k int, err error) {
	f, err := scaling.NewMemory(&scaling.Options{Capacity: uint64(n), ErrorRate: 0.01})
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fs := f.Stats().Filters[0]
	if fs.Layout != counting4.Blocked1024.String() || fs.Counters%counting4.BlockCounters1024 != 0 {
		return 0, 0, fmt.Errorf("the store's filter is %s with %d counters, not whole Blocked1024 blocks", fs.Layout, fs.Counters)
	}
	return fs.Counters, fs.K, nil
}

// newArrays builds the arrays for a filter of counters (whole Blocked1024
// blocks), a fraction fill of them non-zero.
func newArrays(counters uint64, fill float64, rng *rand.Rand) *arrays {
	a := &arrays{w: make([]uint64, counters/16), blocks: counters / counting4.BlockCounters1024,
		seed: rng.Uint64(), salt: counting4.Salt(0)}
	a.b = make([][8]uint64, len(a.w)/8)
	for i := range a.w {
		var x, y uint64
		for j := range 16 {
			if rng.Float64() < fill {
				x |= uint64(1+rng.IntN(15)) << (4 * j)
			}
		}
		for j := range 64 {
			if rng.Float64() < fill {
				y |= 1 << j
			}
		}
		a.w[i], a.b[i/8][i%8] = x, y
	}
	return a
}

// walk tests the k = 8 positions of state s in block blk.
func (a *arrays) walk(blk, s uint64) bool {
	words := (*[16]uint64)(a.w[blk*16:])
	for range 8 {
		if words[s>>4&15]>>(s&15*4)&15 == 0 {
			return false
		}
		s >>= 8
	}
	return true
}

func (a *arrays) format(key []byte) bool {
	g := header.Fmix64(header.HashKey(a.seed, key) + a.salt)
	blk, _ := bits.Mul64(g, a.blocks)
	return a.walk(blk, header.Fmix64(g^golden))
}

func (a *arrays) touch(key []byte) bool {
	g := header.Fmix64(header.HashKey(a.seed, key) + a.salt)
	blk, _ := bits.Mul64(g, a.blocks)
	words := (*[16]uint64)(a.w[blk*16:])
	t := words[0] | words[8] // the two lines' loads start here
	found := a.walk(blk, header.Fmix64(g^golden))
	return found || t&zero != 0 // t changes no answer
}

func (a *arrays) nomix(key []byte) bool {
	h := header.HashKey(a.seed, key) + a.salt
	blk, _ := bits.Mul64(h, a.blocks)
	return a.walk(blk, header.Fmix64(h^golden))
}

func (a *arrays) nomixLat(key []byte) bool {
	h := header.HashKey(a.seed, key) + a.salt
	h += header.Fmix64(h) & zero
	blk, _ := bits.Mul64(h, a.blocks)
	return a.walk(blk, header.Fmix64(h^golden))
}

// cheap walks the block and state of the salted hash itself: no Fmix64 on
// either path (s = h·golden, one multiply). Not the format.
func (a *arrays) cheap(key []byte) bool {
	h := header.HashKey(a.seed, key) + a.salt
	blk, _ := bits.Mul64(h, a.blocks)
	return a.walk(blk, h*golden)
}

// blobloom is greatroar/blobloom's Has (v0.8.1) with k = 8.
func (a *arrays) blobloom(key []byte) bool {
	h := xxhash.Sum64(key)
	h1, h2 := uint32(h>>32), uint32(h)
	blk := &a.b[uint32(uint64(h2)*uint64(uint32(len(a.b)))>>32)]
	for i := 1; i < 8; i++ {
		h1, h2 = h1+h2, h2+uint32(i)
		if blk[h1/64%8]&(1<<(h1%64)) == 0 {
			return false
		}
	}
	return true
}

// blobnib is blobloom's Has over the nibble counters: its block is one
// 64-byte line (8 words, 128 counters) of the same array.
func (a *arrays) blobnib(key []byte) bool {
	h := xxhash.Sum64(key)
	h1, h2 := uint32(h>>32), uint32(h)
	blk := (*[8]uint64)(a.w[uint64(h2)*uint64(uint32(len(a.w)/8))>>32*8:])
	for i := 1; i < 8; i++ {
		h1, h2 = h1+h2, h2+uint32(i)
		if blk[h1/16%8]>>(h1%16*4)&15 == 0 {
			return false
		}
	}
	return true
}

func keys(q int, rng *rand.Rand) [][]byte {
	buf := make([]byte, 0, q*19)
	out := make([][]byte, q)
	for i := range q {
		s := len(buf)
		buf = fmt.Appendf(buf, "absent-%012d", i)
		out[i] = buf[s:len(buf):len(buf)]
	}
	rng.Shuffle(q, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// variantNames lists the variants in the order they run.
func variantNames() []string {
	var a *arrays // method values of a nil *arrays: named, never called
	var names []string
	for _, v := range a.variants() {
		names = append(names, v.name)
	}
	return names
}

// pick checks a -only list against the variants' names; nil means all.
func pick(only string) (map[string]bool, error) {
	if only == "" {
		return nil, nil
	}
	names := variantNames()
	m := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if !slices.Contains(names, n) {
			return nil, fmt.Errorf("-only: no variant %q (have %s)", n, strings.Join(names, ","))
		}
		m[n] = true
	}
	return m, nil
}

// pickFrom keeps the variants in m (all when m is nil).
func pickFrom(vs []variant, m map[string]bool) []variant {
	if m == nil {
		return vs
	}
	var out []variant
	for _, v := range vs {
		if m[v.name] {
			out = append(out, v)
		}
	}
	return out
}

type variant struct {
	name string
	f    func([]byte) bool
}

func (a *arrays) variants() []variant {
	return []variant{{"format", a.format}, {"nomix", a.nomix}, {"nomix+lat", a.nomixLat}, {"touch", a.touch},
		{"cheap", a.cheap}, {"blobloom", a.blobloom}, {"blobnib", a.blobnib}}
}

func main() {
	n := flag.Int("n", 10_000_000, "keys of the store whose first filter the array is as large as")
	q := flag.Int("queries", 4_000_000, "absent keys asked per variant and round")
	fill := flag.Float64("fill", 0.41, "fraction of non-zero counters and set bits")
	rounds := flag.Int("rounds", 3, "rounds; the variants alternate within each")
	only := flag.String("only", "", "comma list of the variants to run (default all)")
	flag.Parse()
	if *n < 100 || *q < 1 || *fill <= 0 || *fill >= 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "walkfloor: need -n >= 100, -queries >= 1, 0 < -fill < 1, -rounds >= 1")
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	vs, err := pick(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "walkfloor:", err)
		os.Exit(2)
	}
	counters, k, err := fileShape(*n)
	if err == nil && k != 8 {
		err = fmt.Errorf("the %d-key store's filter has k = %d; the walks here are written for k = 8", *n, k)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "walkfloor:", err)
		os.Exit(2)
	}
	a := newArrays(counters, *fill, rng)
	ks := keys(*q, rng)
	fmt.Printf("%d counters (%d MB), fill %.2f, %d shuffled absent keys; ns per lookup (keys found)\n", len(a.w)*16, len(a.w)/(1<<17), *fill, *q)
	for r := range *rounds {
		fmt.Printf("round %d:", r+1)
		for _, v := range pickFrom(a.variants(), vs) {
			runtime.GC()
			hits, start := 0, time.Now()
			for _, k := range ks {
				if v.f(k) {
					hits++
				}
			}
			fmt.Printf("  %s %.1f (%d hits)", v.name, float64(time.Since(start).Nanoseconds())/float64(len(ks)), hits)
		}
		fmt.Println()
	}
}
