package counting4

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/dablooms/dablooms/header"
)

// MaxK is the largest k a filter may use.
const MaxK = header.MaxK

// BlockCounters512 is the number of counters in one Blocked512 block (64 bytes).
const BlockCounters512 = 128

// BlockCounters1024 is the number of counters in one Blocked1024 block (128 bytes).
const BlockCounters1024 = 256

// Layout identifies how a key hash maps to counters. Values are header.Layout*.
type Layout uint8

const (
	Blocked512  Layout = header.LayoutBlocked512
	Blocked1024 Layout = header.LayoutBlocked1024
	Classic     Layout = header.LayoutClassic
	Partitioned Layout = header.LayoutPartitioned
)

func (l Layout) String() string {
	switch l {
	case Blocked512:
		return "blocked512"
	case Blocked1024:
		return "blocked1024"
	case Classic:
		return "classic"
	case Partitioned:
		return "partitioned"
	}
	return fmt.Sprintf("layout(%d)", uint8(l))
}

// ErrSize means no filter of the requested size can be built.
var ErrSize = errors.New("counting4: filter size out of range")

const golden = 0x9E3779B97F4A7C15

// Salt returns the per-filter salt added to the key hash, so that the filters
// of one chain use independent positions for the same key.
func Salt(filter int) uint64 { return uint64(filter+1) * golden }

// Positions writes the k counter indices of key hash h (already salted for
// the native layouts: pass h + Salt(i)) into pos. counters is the
// filter's number of counters. It is the single definition of the index
// derivation; the golden vectors in the tests pin it because it is part of
// the file format.
func (l Layout) Positions(h, counters uint64, k int, pos []uint64) {
	switch l {
	case Blocked512, Blocked1024:
		w, per := l.chunks()
		blockedPositions(h, counters, k, pos, w, per)
	case Classic:
		h1 := header.Fmix64(h)
		h2 := header.Fmix64(h1^golden) | 1
		for j := 0; j < k; j++ {
			x := h1 + uint64(j)*h2
			if j > 0 {
				// fastrange of the bare sequence collapses onto a few
				// counters when h2·counters/2^64 is near an integer: mix
				// every further step.
				x = header.Fmix64(x)
			}
			pos[j], _ = bits.Mul64(x, counters)
		}
	case Partitioned:
		cpf := counters / uint64(k)
		h1, h2 := uint32(h), uint32(h>>32)
		for j := 0; j < k; j++ {
			pos[j] = uint64((h1+uint32(j)*h2)%uint32(cpf)) + uint64(j)*cpf
		}
	}
}

// blockedPositions places k positions in one block of 2^w counters (w is 7
// for Blocked512, 8 for Blocked1024): the block is fastrange(g, blocks) with
// g = header.Fmix64(h); the positions are w-bit chunks of s = header.Fmix64(g ^ golden),
// re-mixed (s = header.Fmix64(s ^ golden)) every per positions. ContainsProbe walks
// the same positions (containsBlock).
func blockedPositions(h, counters uint64, k int, pos []uint64, w uint, per int) {
	base, s := blockStart(h, counters, w)
	walkPositions(base, s, k, pos, w, per)
}

// walkPositions writes the k positions of block base and state s (see
// blockedPositions) into pos.
func walkPositions(base, s uint64, k int, pos []uint64, w uint, per int) {
	for j := 0; ; s = header.Fmix64(s ^ golden) { // re-mix the state, not the spent x
		x := s
		for end := min(j+per, k); j < end; j++ {
			pos[j] = base + x&(1<<w-1)
			x >>= w
		}
		if j >= k {
			return
		}
	}
}

// blockStart returns the first counter of h's block of 2^w counters and the
// position state s (see blockedPositions).
func blockStart(h, counters uint64, w uint) (base, s uint64) {
	return blockStartMixed(header.Fmix64(h), counters, w)
}

// blockStartMixed is blockStart of the key whose mixed hash is g =
// Fmix64(h): its block is the high half of g times the number of blocks,
// which never decreases as g grows (Filter.Order).
func blockStartMixed(g, counters uint64, w uint) (base, s uint64) {
	base, _ = bits.Mul64(g, counters>>w)
	return base << w, header.Fmix64(g ^ golden)
}

// chunks returns a blocked layout's position width w (a block holds 2^w
// counters) and the positions per state (see blockedPositions); 0, 0 for the
// others.
func (l Layout) chunks() (w uint, per int) {
	switch l {
	case Blocked512:
		return 7, 9
	case Blocked1024:
		return 8, 8
	}
	return 0, 0
}

// blockSize returns the counters per block of a blocked layout, or 0.
func (l Layout) blockSize() uint64 {
	switch l {
	case Blocked512:
		return BlockCounters512
	case Blocked1024:
		return BlockCounters1024
	}
	return 0
}

// BlockWords returns the words per block of a blocked layout (a key's
// counters all lie in one block), or 0.
func (l Layout) BlockWords() int { return int(l.blockSize() / 16) }

// Size returns the number of counters and the k that a filter of layout l
// needs to hold n keys at false-positive rate p.
func (l Layout) Size(n uint64, p float64) (counters uint64, k int, err error) {
	if n == 0 || !(p > 0 && p < 1) {
		return 0, 0, fmt.Errorf("%w: capacity %d, error rate %v", ErrSize, n, p)
	}
	fn := float64(n)
	switch l {
	case Classic, Partitioned:
		m := math.Ceil(-fn * math.Log(p) / (math.Ln2 * math.Ln2))
		k = int(math.Round(m / fn * math.Ln2))
		k = max(1, min(k, MaxK))
		if l == Partitioned {
			m = math.Ceil(m/float64(k)) * float64(k)
		}
		counters = uint64(m)
		if m > float64(header.MaxFileSize) {
			return 0, 0, fmt.Errorf("%w: %v counters", ErrSize, m)
		}
	case Blocked512, Blocked1024:
		bs := float64(l.blockSize())
		best := math.Inf(1)
		worse := 0
		for kk := 1; kk <= MaxK && worse < 3; kk++ {
			b := blocksFor(fn, p, kk, bs)
			if b < best {
				best, k, worse = b, kk, 0
			} else {
				worse++ // past the optimum k: blocks only grow from here
			}
		}
		if best*bs > float64(header.MaxFileSize) {
			return 0, 0, fmt.Errorf("%w: capacity %d at error rate %v needs %v counters", ErrSize, n, p, best*bs)
		}
		counters = uint64(best * bs)
	default:
		return 0, 0, fmt.Errorf("%w: unknown layout %d", ErrSize, l)
	}
	if counters == 0 {
		return 0, 0, fmt.Errorf("%w: zero counters", ErrSize)
	}
	return counters, k, nil
}

// blockedFPR512 is the expected false-positive rate of a Blocked512 filter with
// the given number of blocks holding n keys with k counters each.
func blockedFPR512(n, blocks float64, k int) float64 {
	return blockedFPR(n, blocks, k, BlockCounters512)
}

func blockedFPR(n, blocks float64, k int, bs float64) float64 {
	if !(n > 0) {
		return 0
	}
	if !(blocks >= 1) {
		return 1
	}
	lambda := n / blocks
	// Once even the smallest i summed below has k·i ≥ 50·bs, every term is
	// 1 and so is the sum. Returning early also bounds the cost, which grows
	// with √lambda (Stats passes item counts read from the file).
	if lambda-12*math.Sqrt(lambda)-5 >= 50*bs {
		return 1
	}
	// Poisson terms over mean ± 12 sd, from the mode outwards by the ratio
	// P(i+1)/P(i) = λ/(i+1), so no term needs lgamma.
	lo := max(0, int(lambda-12*math.Sqrt(lambda)-5))
	hi := int(lambda+12*math.Sqrt(lambda)) + 20
	mode := int(lambda)
	lg, _ := math.Lgamma(float64(mode) + 1)
	pm := math.Exp(float64(mode)*math.Log(lambda) - lambda - lg)
	if lambda == 0 {
		pm = 1
	}
	sum := 0.0
	pi := pm
	for i := mode; i <= hi; i++ {
		sum += pi * blockHit(k, i, int(bs))
		pi *= lambda / float64(i+1)
	}
	pi = pm
	for i := mode - 1; i >= lo; i-- {
		pi *= float64(i+1) / lambda
		sum += pi * blockHit(k, i, int(bs))
	}
	return sum
}

// blocksFor returns the fewest blocks of bs counters giving an FPR ≤ p with
// k counters per key.
func blocksFor(n, p float64, k int, bs float64) float64 {
	lo, hi := 1.0, math.Max(2, math.Ceil(n*-math.Log(p)/(math.Ln2*math.Ln2)/bs))
	for blockedFPR(n, hi, k, bs) > p {
		lo, hi = hi, hi*2
		if hi > 1<<40 {
			return math.Inf(1)
		}
	}
	if blockedFPR(n, lo, k, bs) <= p {
		return lo
	}
	for hi-lo > 1 {
		mid := math.Floor((lo + hi) / 2)
		if blockedFPR(n, mid, k, bs) <= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// EstimateFPR returns the expected false-positive rate of a filter with the
// given size holding n keys.
func (l Layout) EstimateFPR(counters uint64, k int, n uint64) float64 {
	if n == 0 {
		return 0
	}
	if bs := l.blockSize(); bs != 0 {
		return blockedFPR(float64(n), float64(counters/bs), k, float64(bs))
	}
	return math.Pow(-math.Expm1(-float64(k)*float64(n)/float64(counters)), float64(k))
}

type blockHitCache struct {
	sync.Mutex
	hit  [MaxK + 1][]float64
	dist [MaxK + 1][]float64
}

var blockHits = map[int]*blockHitCache{BlockCounters512: {}, BlockCounters1024: {}}

// blockHit is the probability that a query's k positions (uniform, with
// replacement) all hit non-zero counters of a block of bs counters holding i
// keys: E[(S/bs)^k], with the distribution of S (counters set) computed
// exactly by dynamic programming over the i·k increments.
func blockHit(k, i, bs int) float64 {
	if float64(k*i) >= 50*float64(bs) { // P(some counter unset) ≤ bs·e^(-k·i/bs) < 1e-18
		return 1
	}
	c := blockHits[bs]
	c.Lock()
	defer c.Unlock()
	for len(c.hit[k]) <= i {
		d := c.dist[k]
		if d == nil {
			d = make([]float64, bs+1)
			d[0] = 1
			c.dist[k] = d
		} else {
			for b := 0; b < k; b++ {
				for s := bs; s > 0; s-- {
					d[s] = d[s]*float64(s)/float64(bs) + d[s-1]*float64(bs-s+1)/float64(bs)
				}
				d[0] = 0
			}
		}
		p := 0.0
		for s, ps := range d {
			if ps > 0 {
				p += ps * math.Pow(float64(s)/float64(bs), float64(k))
			}
		}
		c.hit[k] = append(c.hit[k], p)
	}
	return c.hit[k][i]
}
