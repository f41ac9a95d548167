package main

import (
	boom "github.com/tylertreat/BoomFilters"
)

// tylertreat/BoomFilters: CountingBloomFilter and ScalableBloomFilter.
//
// Neither is safe for concurrent use, not even Test: every call resets and
// writes the filter's single shared hash.Hash64 (FNV-1 64). Both are "n/a"
// throughout the parallel table.
//
// boom-counting: NewDefaultCountingBloomFilter(n, 0.01), i.e. 4-bit counters.
// Remove is TestAndRemove (returns false = key not present = counted as a
// remove failure).
// bytes = ceil(Capacity() * 4 / 8): Capacity() is m, the number of 4-bit
// buckets; this is exactly the size of the library's bucket []byte.
//
// boom-scalable: NewScalableBloomFilter(hint, 0.01, 0.8) where hint is
// -sbf-hint (default n). The library adds a partitioned sub-filter of the
// same hint-sized capacity (it does not grow sizes) whenever the newest one
// is half full, with error rate 0.01*0.8^i. No remove.
// bytes = Capacity()/8: Capacity() is the sum of the sub-filters' m in bits
// (each sub-filter rounds its k partitions up to whole bytes, so this can be
// low by under k bytes per sub-filter).

var boomCountingSpec = spec{
	id:        "boom-counting",
	desc:      "tylertreat/BoomFilters CountingBloomFilter: NewDefaultCountingBloomFilter(n, 0.01) (4-bit counters)",
	new:       newBoomCounting,
	canRemove: true,
}

var boomScalableSpec = spec{
	id:   "boom-scalable",
	desc: "tylertreat/BoomFilters ScalableBloomFilter: NewScalableBloomFilter(hint, 0.01, 0.8), hint = -sbf-hint (default n)",
	new:  newBoomScalable,
}

type boomCountingSystem struct{ f *boom.CountingBloomFilter }

func newBoomCounting(c buildConfig) (system, error) {
	return &boomCountingSystem{f: boom.NewDefaultCountingBloomFilter(uint(c.n), 0.01)}, nil
}

func (s *boomCountingSystem) add(key []byte, _ uint64) error { s.f.Add(key); return nil }
func (s *boomCountingSystem) contains(key []byte) bool       { return s.f.Test(key) }
func (s *boomCountingSystem) remove(key []byte, _ uint64) error {
	if !s.f.TestAndRemove(key) {
		return errRemoveMiss
	}
	return nil
}
func (s *boomCountingSystem) bytes() int64 { return (int64(s.f.Capacity())*4 + 7) / 8 }
func (s *boomCountingSystem) close() error { return nil }

type boomScalableSystem struct{ f *boom.ScalableBloomFilter }

func newBoomScalable(c buildConfig) (system, error) {
	hint := c.sbfHint
	if hint <= 0 {
		hint = c.n
	}
	return &boomScalableSystem{f: boom.NewScalableBloomFilter(uint(hint), 0.01, 0.8)}, nil
}

func (s *boomScalableSystem) add(key []byte, _ uint64) error { s.f.Add(key); return nil }
func (s *boomScalableSystem) contains(key []byte) bool       { return s.f.Test(key) }
func (s *boomScalableSystem) bytes() int64                   { return int64(s.f.Capacity()) / 8 }
func (s *boomScalableSystem) close() error                   { return nil }
