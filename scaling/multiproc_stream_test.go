package scaling

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/dablooms/dablooms/counting4"
)

// Deterministic operation streams (tests 1 and 3).
//
// A stream is a seeded PRNG sequence of Add/Remove operations. A Remove
// always names an entry (key, id) the stream itself added before and has not
// removed yet, so it is valid. Keys are private to the stream, from a pool
// shared with one stream of another process (pair-shared), or from a small
// hot pool shared by one goroutine of every process; a stream holds at most
// one live copy of a shared or hot key, which bounds every counter (no
// saturation: the replay of a counting filter without saturation is order
// independent, so a sequential replay must equal any interleaving).

const (
	kindPrivate = 1
	kindShared  = 2
	kindHot     = 3
)

func keyCode(kind, group, n uint64) uint64 { return kind<<60 | group<<44 | n }

func codeKey(code uint64, buf *[8]byte) []byte {
	binary.LittleEndian.PutUint64(buf[:], code)
	return buf[:]
}

type streamCfg struct {
	Streams    int // total number of streams (ids are i*Streams + s)
	MaxLive    int // a stream removes when it holds this many entries
	RemovePct  int // chance (%) of a remove when the stream holds entries
	SharedPct  int // chance (%) that an add uses a pair-shared key
	HotPct     int // chance (%) that an add uses a hot key
	SharedPool int
	HotPool    int
}

type liveEntry struct{ code, id uint64 }

type streamOp struct {
	remove bool
	code   uint64
	id     uint64
}

type opStream struct {
	cfg  streamCfg
	s    int
	rng  *rand.Rand
	i    uint64
	live []liveEntry
	held map[uint64]struct{}
}

func newOpStream(cfg streamCfg, seed uint64, s int) *opStream {
	return &opStream{cfg: cfg, s: s, rng: rand.New(rand.NewPCG(seed, uint64(s)*0x9E3779B97F4A7C15+1)), held: map[uint64]struct{}{}}
}

func (st *opStream) next() streamOp {
	c := &st.cfg
	st.i++
	if n := len(st.live); n > 0 && (n >= c.MaxLive || st.rng.IntN(100) < c.RemovePct) {
		k := st.rng.IntN(n)
		e := st.live[k]
		st.live[k] = st.live[n-1]
		st.live = st.live[:n-1]
		delete(st.held, e.code)
		return streamOp{remove: true, code: e.code, id: e.id}
	}
	id := st.i*uint64(c.Streams) + uint64(st.s) // increasing per stream
	code := keyCode(kindPrivate, uint64(st.s), st.i)
	r := st.rng.IntN(100)
	cand := uint64(0)
	switch {
	case r < c.HotPct && c.HotPool > 0:
		cand = keyCode(kindHot, uint64(st.s%2), uint64(st.rng.IntN(c.HotPool)))
	case r < c.HotPct+c.SharedPct && c.SharedPool > 0:
		cand = keyCode(kindShared, uint64(st.s%(c.Streams/2)), uint64(st.rng.IntN(c.SharedPool)))
	}
	if cand != 0 {
		if _, ok := st.held[cand]; !ok {
			code = cand
			st.held[code] = struct{}{}
		}
	}
	st.live = append(st.live, liveEntry{code, id})
	return streamOp{code: code, id: id}
}

func applyOp(f *Filter, op streamOp) error {
	var b [8]byte
	k := codeKey(op.code, &b)
	if op.remove {
		return f.Remove(k, op.id)
	}
	return f.Add(k, op.id)
}

// codePositions returns the counters key code maps to in filter m.
func codePositions(m *member, seed, code uint64, pos []uint64) []uint64 {
	var b [8]byte
	p := pos[:m.desc.K]
	m.cf.Positions(m.keyHash(hashes{native: HashKey(seed, codeKey(code, &b))}), p)
	return p
}

// replayStream applies the first n operations of stream s to total (one int32
// per counter of filter m) and adds the stream's own peak per counter to
// bound: Σ over streams of each stream's peak bounds the counter in any
// interleaving, so bound < 15 proves no counter ever saturated. It returns
// the stream, whose next operation is number n and whose live entries are
// the items the n operations left.
func replayStream(m *member, seed uint64, cfg streamCfg, s int, n uint64, total, bound []int32) *opStream {
	st := newOpStream(cfg, seed, s)
	cur := make([]int16, len(total))
	peak := make([]int16, len(total))
	var pos [counting4.MaxK]uint64
	for i := uint64(0); i < n; i++ {
		op := st.next()
		d := int16(1)
		if op.remove {
			d = -1
		}
		for _, p := range codePositions(m, seed, op.code, pos[:]) {
			total[p] += int32(d)
			cur[p] += d
			peak[p] = max(peak[p], cur[p])
		}
	}
	for p, v := range peak {
		bound[p] += int32(v)
	}
	return st
}

func maxBound(bound []int32) int32 {
	var mx int32
	for _, v := range bound {
		mx = max(mx, v)
	}
	return mx
}
