package main

import (
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// ours-original-floor: a control, not a peer. It is the floor of
// ours-original-excl's single Add and Remove, timed in the same
// interleaved runs: the same file (the original's configuration, its
// chain already grown to the filters n keys need), changed the way the C
// original changes its counters and nothing more. Each add or remove is
// the native hash plus the filter's salt, the key's positions
// (counting4.Filter.Positions), and a plain read-modify-write of each
// counter (saturating at 15, never below 0, as the original's bitmap
// does), in the filter whose first id is the last at or below the id. No
// lock, record, undo block, dirty mark, admission, id range or item
// count: nothing that makes an operation recoverable or safe beside
// another goroutine or process. Its contains is the filter's
// ContainsProbe in each filter, newest first.
//
// The file is built untimed: scaling.Create, the chain grown by an
// AddBatch of n setup keys with ids 0..n-1 (the ids the timed adds use,
// so each key lands in the filter ours-original puts it in), emptied
// again by a RemoveBatch of the same keys, closed, and mapped read-write
// by the harness.

var oursFloorSpec = spec{
	id:         "ours-original-floor",
	desc:       "control: ours-original's file changed as the C original changes its counters (hash, positions, a plain read-modify-write per counter; no lock, record or bookkeeping)",
	new:        newOursFloor,
	canRemove:  true,
	singleOnly: true,
}

type oursFloor struct {
	path  string
	m     []byte
	seed  uint64
	chain []floorFilter // chain order
	pos   [counting4.MaxK]uint64
}

type floorFilter struct {
	first, salt uint64
	cf          *counting4.Filter
	w           []uint64
}

func newOursFloor(c buildConfig) (system, error) {
	if c.layout != "" {
		return nil, fmt.Errorf("ours-original-floor uses the default layout, not -layout %s", c.layout)
	}
	s := &oursFloor{path: filepath.Join(c.dir, fmt.Sprintf("ours-original-floor-%d.dablooms", c.rep))}
	_ = os.Remove(s.path)
	if err := growChain(s.path, c.n); err != nil {
		return nil, err
	}
	if err := s.mapFile(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// growChain creates the file at path in the original's configuration
// with the chain n keys of ids 0..n-1 grow, and every counter zero again.
func growChain(path string, n int) error {
	f, err := scaling.Create(path, &scaling.Options{Capacity: 1_000_000, ErrorRate: 0.01, GrowthFactor: 1, TighteningRatio: 0.5, Exclusive: true})
	if err != nil {
		return err
	}
	// Every key first, then every removal: a filter fills (and the chain
	// grows) on its item count, which each removal lowers again.
	const batch = 1 << 16
	keys, ids := make([][]byte, 0, batch), make([]uint64, 0, batch)
	for _, add := range []bool{true, false} {
		for lo := 0; lo < n && err == nil; lo += batch {
			keys, ids = keys[:0], ids[:0]
			for i := lo; i < min(lo+batch, n); i++ {
				keys, ids = append(keys, fmt.Appendf(nil, "floor-setup-%012d", i)), append(ids, uint64(i))
			}
			if add {
				err = f.AddBatch(keys, ids)
				continue
			}
			var removed int
			if removed, err = f.RemoveBatch(keys, ids, nil); err == nil && removed != len(keys) {
				err = fmt.Errorf("ours-original-floor setup: removed %d of %d keys", removed, len(keys))
			}
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mapFile maps the file read-write and finds its filters.
func (s *oursFloor) mapFile() error {
	var p *header.Picked
	var err error
	if s.m, p, err = mapPicked(s.path, true); err != nil {
		return err
	}
	size := int64(len(s.m))
	s.seed = p.Params.Seed
	for _, d := range p.Filters {
		if d.HashID != header.HashXXH64Seeded || d.Offset+d.CounterBytes() > size || d.Counters/2 > uint64(d.CounterBytes()) {
			return fmt.Errorf("ours-original-floor: filter in slot %d is not a native filter that fits the file", d.Slot)
		}
		w := unsafe.Slice((*uint64)(unsafe.Pointer(&s.m[d.Offset])), d.Counters/16)
		cf, err := counting4.New(w, counting4.Layout(d.LayoutID), d.Counters, d.K)
		if err != nil {
			return err
		}
		s.chain = append(s.chain, floorFilter{first: d.FirstID, salt: counting4.Salt(d.Slot), cf: cf, w: w})
	}
	if len(s.chain) == 0 {
		return fmt.Errorf("ours-original-floor: the file has no filter")
	}
	return nil
}

// target is the filter id routes to, and the key's positions in it.
func (s *oursFloor) target(key []byte, id uint64) ([]uint64, []uint64) {
	i := len(s.chain) - 1
	for i > 0 && id < s.chain[i].first {
		i--
	}
	ff := &s.chain[i]
	p := s.pos[:ff.cf.K()]
	ff.cf.Positions(header.HashKey(s.seed, key)+ff.salt, p)
	return ff.w, p
}

func (s *oursFloor) add(key []byte, id uint64) error {
	w, p := s.target(key, id)
	for _, c := range p {
		if sh := c & 15 * 4; w[c>>4]>>sh&15 != 15 {
			w[c>>4] += 1 << sh
		}
	}
	return nil
}

func (s *oursFloor) remove(key []byte, id uint64) error {
	w, p := s.target(key, id)
	for _, c := range p {
		sh := c & 15 * 4
		if v := w[c>>4] >> sh & 15; v != 0 && v != 15 {
			w[c>>4] -= 1 << sh
		}
	}
	return nil
}

func (s *oursFloor) contains(key []byte) bool {
	h := header.HashKey(s.seed, key)
	for i := len(s.chain) - 1; i >= 0; i-- {
		ff := &s.chain[i]
		if ff.cf.ContainsProbe(ff.cf.Prepare(h + ff.salt)) {
			return true
		}
	}
	return false
}

func (s *oursFloor) bytes() int64 { return int64(len(s.m)) }
func (s *oursFloor) filters() int { return len(s.chain) }

func (s *oursFloor) close() error {
	var err error
	if s.m != nil {
		err = unix.Munmap(s.m)
		s.m, s.chain = nil, nil
	}
	if rerr := os.Remove(s.path); err == nil && rerr != nil && !os.IsNotExist(rerr) {
		err = rerr
	}
	return err
}
