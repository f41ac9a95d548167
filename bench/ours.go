package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/scaling"
)

// This project's scaling counting Bloom filter, in three configurations:
//
//	ours-file      file-backed (scaling.Create), Capacity n, ErrorRate 0.01, defaults otherwise
//	ours-mem       memory only (scaling.NewMemory), same options
//	ours-original  file-backed with the C original's configuration:
//	               Capacity 1,000,000, ErrorRate 0.01, GrowthFactor 1, TighteningRatio 0.5
//	ours-original-excl  the same, with the handle the file's only writer
//	               (Options.Exclusive: stores, no compare-and-swap; like the C original,
//	               which has one writer)
//
// ids are the key's index, so they increase in the single-goroutine run; in
// the parallel run goroutine g adds keys g, g+P, g+2P, ... so ids stay
// nearly increasing (see timeStrided).
//
// bytes = Stats().FileSize: the size of the file, or of the memory region
// for NewMemory, header included.

// ours is one configuration of this project's store in the comparison.
type ours struct {
	id, desc string
	memory   bool // scaling.NewMemory rather than a file
	original bool // the C original's configuration
	excl     bool // Options.Exclusive
	batch    bool // timed through AddBatch, ContainsBatch and RemoveBatch (single goroutine)
}

func (o ours) spec() spec {
	return spec{
		id:              o.id,
		desc:            o.desc,
		new:             func(c buildConfig) (system, error) { return newOurs(o, c) },
		concurrentWrite: !o.batch,
		concurrentRead:  !o.batch,
		canRemove:       true,
		singleOnly:      o.batch,
	}
}

var (
	oursFileSpec = ours{id: "ours-file",
		desc: "this project, file-backed: scaling.Create, Capacity n, ErrorRate 0.01"}.spec()
	oursMemSpec = ours{id: "ours-mem", memory: true,
		desc: "this project, in memory: scaling.NewMemory, Capacity n, ErrorRate 0.01"}.spec()
	oursOriginalSpec = ours{id: "ours-original", original: true,
		desc: "this project, file-backed, original's configuration: Capacity 1e6, ErrorRate 0.01, GrowthFactor 1, TighteningRatio 0.5"}.spec()
	oursOriginalExclSpec = ours{id: "ours-original-excl", original: true, excl: true,
		desc: "ours-original with Options.Exclusive: the file's only writer, stores in place of compare-and-swaps (modifications one at a time)"}.spec()
	oursBatchSpec = ours{id: "ours-batch", batch: true,
		desc: "ours-file through AddBatch, ContainsBatch and RemoveBatch, 4096 keys per call"}.spec()
	oursExclBatchSpec = ours{id: "ours-excl-batch", excl: true, batch: true,
		desc: "ours-batch with Options.Exclusive (the file's only writer)"}.spec()
)

type oursSystem struct {
	path string // "" for memory
	f    *scaling.Filter
}

// layouts maps -layout to a counter layout; "" is the library's default.
var layouts = map[string]counting4.Layout{"": 0, "blocked512": counting4.Blocked512, "blocked1024": counting4.Blocked1024, "classic": counting4.Classic}

func newOurs(o ours, c buildConfig) (system, error) {
	opts := &scaling.Options{Capacity: uint64(c.n), ErrorRate: 0.01, Layout: layouts[c.layout], Exclusive: o.excl} // parseFlags checked the name
	if o.original {
		opts.Capacity, opts.GrowthFactor, opts.TighteningRatio = 1_000_000, 1, 0.5
	}
	s := &oursSystem{}
	var err error
	if o.memory {
		s.f, err = scaling.NewMemory(opts)
	} else {
		s.path = filepath.Join(c.dir, fmt.Sprintf("%s-%d.dablooms", o.id, c.rep))
		_ = os.Remove(s.path)
		s.f, err = scaling.Create(s.path, opts)
	}
	if err != nil {
		return nil, err
	}
	if o.batch {
		return oursBatch{s}, nil
	}
	return s, nil
}

// oursBatch is an oursSystem timed through its batch calls.
type oursBatch struct{ *oursSystem }

func (s oursBatch) addBatch(keys [][]byte, ids []uint64) error { return s.f.AddBatch(keys, ids) }
func (s oursBatch) containsBatch(keys [][]byte, out []bool)    { s.f.ContainsBatch(keys, out) }

func (s oursBatch) removeBatch(keys [][]byte, ids []uint64) error {
	n, err := s.f.RemoveBatch(keys, ids, nil)
	if err == nil && n != len(keys) {
		err = fmt.Errorf("removed %d of %d keys", n, len(keys))
	}
	return err
}

func (s *oursSystem) add(key []byte, id uint64) error    { return s.f.Add(key, id) }
func (s *oursSystem) remove(key []byte, id uint64) error { return s.f.Remove(key, id) }
func (s *oursSystem) contains(key []byte) bool           { return s.f.Contains(key) }
func (s *oursSystem) bytes() int64                       { return s.f.Stats().FileSize }
func (s *oursSystem) filters() int                       { return len(s.f.Stats().Filters) }

func (s *oursSystem) close() error {
	err := s.f.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if s.path != "" {
		if rerr := os.Remove(s.path); err == nil && rerr != nil && !os.IsNotExist(rerr) {
			err = rerr
		}
	}
	return err
}
