package legacy

import (
	"fmt"
	"math"
)

const (
	// ScalingHeaderSize is the size of a scaling file's header: max_id, mem_seqnum, disk_seqnum.
	ScalingHeaderSize = 24
	// FilterHeaderSize is the size of a filter's header: start id, count, pad.
	FilterHeaderSize = 16
)

// FilterLayout is the shape of one counting filter as the original sized it.
type FilterLayout struct {
	ErrorRate     float64 // target error rate p of this filter
	K             int     // number of hash functions, ceil(log2(1/p))
	CountsPerFunc uint32  // counters owned by each hash function
	Counters      uint64  // K * CountsPerFunc
	Bytes         uint64  // FilterHeaderSize + ceil(Counters/2)
	Offset        uint64  // where the filter's header starts in its file
}

// Layout returns the layout of filter number filter (0 is the oldest) in a scaling file the
// original created with the given capacity and error rate. Filter i targets the error rate
// errorRate·0.5^(i+1) and starts where filter i-1 ends, the first one after the 24-byte header.
//
// The arithmetic is the original's, in the same order and precision, with logarithms rounded
// correctly like glibc's, so K and CountsPerFunc are exactly what the original computed.
func Layout(capacity uint64, errorRate float64, filter int) (FilterLayout, error) {
	if err := checkParams(capacity, errorRate); err != nil {
		return FilterLayout{}, err
	}
	if filter < 0 {
		return FilterLayout{}, fmt.Errorf("%w: filter index %d is negative", ErrBadParams, filter)
	}
	off := uint64(ScalingHeaderSize)
	for i := 0; ; i++ {
		l, err := scalingFilter(capacity, errorRate, i, off)
		if err != nil || i == filter {
			return l, err
		}
		off += l.Bytes
	}
}

// CountingLayout returns the layout of a single counting filter file (no scaling header) the
// original created with the given capacity and error rate; its error rate is errorRate itself.
func CountingLayout(capacity uint64, errorRate float64) (FilterLayout, error) {
	if err := checkParams(capacity, errorRate); err != nil {
		return FilterLayout{}, err
	}
	return sizeFilter(capacity, errorRate, 0)
}

func checkParams(capacity uint64, errorRate float64) error {
	switch {
	case capacity == 0 || capacity > math.MaxUint32:
		// The original stored the capacity in an unsigned int.
		return fmt.Errorf("%w: capacity %d is not in 1..%d", ErrBadParams, capacity, uint64(math.MaxUint32))
	case !(errorRate > 0 && errorRate < 1): // also NaN
		return fmt.Errorf("%w: error rate %g is not in (0, 1)", ErrBadParams, errorRate)
	}
	return nil
}

// scalingFilter sizes filter i of a scaling file, starting at off. The parameters are valid.
func scalingFilter(capacity uint64, errorRate float64, i int, off uint64) (FilterLayout, error) {
	// C: error_rate * pow(0.5, num_blooms + 1); the power of two is exact (Ldexp is exact
	// wherever the result below can pass sizeFilter's checks).
	l, err := sizeFilter(capacity, errorRate*math.Ldexp(1, -(i+1)), off)
	if err != nil {
		return l, fmt.Errorf("filter %d: %w", i, err)
	}
	return l, nil
}

// sizeFilter is the original's counting_bloom_init. The parameters are valid.
func sizeFilter(capacity uint64, p float64, off uint64) (FilterLayout, error) {
	kArg, k, ok := kOf(p)
	if !ok {
		return FilterLayout{}, fmt.Errorf("%w: error rate %g is too small (log2(1/p) = %g)", ErrBadParams, p, kArg)
	}
	cpfArg := cpfOf(capacity, p, k)
	cpf := math.Ceil(cpfArg)
	if cpf > math.MaxInt32 { // C: (int) ceil(...)
		return FilterLayout{}, fmt.Errorf("%w: capacity %d at error rate %g needs %g counters per function", ErrBadParams, capacity, p, cpf)
	}
	counters := uint64(k) * uint64(cpf)
	return FilterLayout{
		ErrorRate:     p,
		K:             k,
		CountsPerFunc: uint32(cpf),
		Counters:      counters,
		Bytes:         FilterHeaderSize + (counters+1)/2,
		Offset:        off,
	}, nil
}

// ln2 is C's log(2).
var ln2 = ln(2)

// kOf is C's nfuncs = (int) ceil(log(1 / p) / log(2)); ok is false where C's result is undefined
// or absurd (p so small that 1/p overflows).
func kOf(p float64) (kArg float64, k int, ok bool) {
	inv := 1 / p
	if p <= 0 || math.IsInf(inv, 0) {
		return inv, 0, false
	}
	kArg = ln(inv) / ln2
	return kArg, int(math.Ceil(kArg)), true
}

// cpfOf is the argument of C's counts_per_func = (int) ceil(
// capacity * fabs(log(p)) / (nfuncs * pow(log(2), 2))).
func cpfOf(capacity uint64, p float64, k int) float64 {
	return float64(capacity) * math.Abs(ln(p)) / (float64(k) * (ln2 * ln2))
}
