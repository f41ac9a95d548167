package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dablooms/dablooms/scaling"
)

// This project's scaling counting Bloom filter, in three configurations:
//
//	ours-file      file-backed (scaling.Create), Capacity n, ErrorRate 0.01, defaults otherwise
//	ours-mem       memory only (scaling.NewMemory), same options
//	ours-original  file-backed with the C original's configuration:
//	               Capacity 1,000,000, ErrorRate 0.01, GrowthFactor 1, TighteningRatio 0.5
//
// ids are the key's index, so they increase in the single-goroutine run; in
// the parallel run goroutine g adds keys g, g+P, g+2P, ... so ids stay
// nearly increasing (see runParallel).
//
// bytes = Stats().FileSize: the size of the file, or of the memory region
// for NewMemory, header included.

var oursFileSpec = spec{
	id:              "ours-file",
	desc:            "this project, file-backed: scaling.Create, Capacity n, ErrorRate 0.01",
	new:             func(c buildConfig) (system, error) { return newOurs("ours-file", c, true, false) },
	concurrentWrite: true,
	concurrentRead:  true,
	canRemove:       true,
}

var oursMemSpec = spec{
	id:              "ours-mem",
	desc:            "this project, in memory: scaling.NewMemory, Capacity n, ErrorRate 0.01",
	new:             func(c buildConfig) (system, error) { return newOurs("ours-mem", c, false, false) },
	concurrentWrite: true,
	concurrentRead:  true,
	canRemove:       true,
}

var oursOriginalSpec = spec{
	id:              "ours-original",
	desc:            "this project, file-backed, original's configuration: Capacity 1e6, ErrorRate 0.01, GrowthFactor 1, TighteningRatio 0.5",
	new:             func(c buildConfig) (system, error) { return newOurs("ours-original", c, true, true) },
	concurrentWrite: true,
	concurrentRead:  true,
	canRemove:       true,
}

type oursSystem struct {
	label string
	path  string // "" for memory

	// Method values of the scaling filter. Holding them (rather than the
	// filter) keeps this adapter independent of the concrete type's name.
	addFn      func([]byte, uint64) error
	removeFn   func([]byte, uint64) error
	containsFn func([]byte) bool
	sizeFn     func() int64
	flushFn    any // f.Flush: func() error or func()
	closeFn    any // f.Close: func() error or func()
}

// setInt assigns n to an integer field of any integer type, so that this
// file compiles whatever integer type Options.Capacity has.
func setInt[T ~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64](dst *T, n int) { *dst = T(n) }

// callMaybeErr calls a func() error or a func() (Flush/Close) and returns its
// error, if it has one.
func callMaybeErr(fn any) error {
	switch fn := fn.(type) {
	case func() error:
		return fn()
	case func():
		fn()
		return nil
	case nil:
		return nil
	default:
		return fmt.Errorf("unexpected signature %T", fn)
	}
}

func newOurs(label string, c buildConfig, file, original bool) (system, error) {
	opts := &scaling.Options{ErrorRate: 0.01}
	setInt(&opts.Capacity, c.n)
	if original {
		setInt(&opts.Capacity, 1_000_000)
		opts.GrowthFactor = 1
		opts.TighteningRatio = 0.5
	}
	s := &oursSystem{label: label}
	if file {
		s.path = filepath.Join(c.dir, fmt.Sprintf("%s-%d.dablooms", label, c.rep))
		_ = os.Remove(s.path)
		f, err := scaling.Create(s.path, opts)
		if err != nil {
			return nil, err
		}
		s.addFn, s.removeFn, s.containsFn = f.Add, f.Remove, f.Contains
		s.sizeFn = func() int64 { return int64(f.Stats().FileSize) }
		s.flushFn, s.closeFn = f.Flush, f.Close
	} else {
		f, err := scaling.NewMemory(opts)
		if err != nil {
			return nil, err
		}
		s.addFn, s.removeFn, s.containsFn = f.Add, f.Remove, f.Contains
		s.sizeFn = func() int64 { return int64(f.Stats().FileSize) }
		s.flushFn, s.closeFn = f.Flush, f.Close
	}
	return s, nil
}

func (s *oursSystem) name() string                       { return s.label }
func (s *oursSystem) add(key []byte, id uint64) error    { return s.addFn(key, id) }
func (s *oursSystem) remove(key []byte, id uint64) error { return s.removeFn(key, id) }
func (s *oursSystem) contains(key []byte) bool           { return s.containsFn(key) }
func (s *oursSystem) bytes() int64                       { return s.sizeFn() }

func (s *oursSystem) close() error {
	err := callMaybeErr(s.flushFn)
	if cerr := callMaybeErr(s.closeFn); err == nil {
		err = cerr
	}
	if s.path != "" {
		if rerr := os.Remove(s.path); err == nil && rerr != nil && !os.IsNotExist(rerr) {
			err = rerr
		}
	}
	return err
}
