package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// system is one filter instance under test. An instance is built empty for
// one repetition, filled, queried, optionally emptied again, then closed.
//
// add and remove take the key's index as id: the project's filters need
// increasing ids, the peers ignore it.
type system interface {
	add(key []byte, id uint64) error
	contains(key []byte) bool
	// bytes is the size of the structure's storage: the file (or memory
	// region) for ours, the bit/counter/fingerprint array for the peers.
	// How each adapter computes it is documented next to its bytes method.
	bytes() int64
	close() error
}

// remover is implemented by systems that support deletion.
type remover interface {
	remove(key []byte, id uint64) error
}

// batcher is implemented by systems timed through batch calls: every
// phase hands them batchSize keys at a time (see timeBatched).
type batcher interface {
	addBatch(keys [][]byte, ids []uint64) error
	containsBatch(keys [][]byte, out []bool)
	removeBatch(keys [][]byte, ids []uint64) error
}

// preparer is implemented by systems that need a step between the timed
// adds and the timed lookups (untimed): ours-walk maps the filled file.
type preparer interface {
	prepare() error
}

// batchSize is the keys per batch call, as dabloomsctl add --from uses.
const batchSize = 4096

// filterCounter is implemented by systems that can say how many
// sub-filters they hold (the bytes/key of a chain depends on it).
type filterCounter interface {
	filters() int
}

// repRunner runs whole repetitions of a system outside this process's Go
// code (the C original runs in a subprocess, timed there, see
// coriginal.go): runRep does one fresh instance through every phase with
// the same keys, ids and order as runOne and returns its sample.
type repRunner interface {
	runRep(cfg buildConfig) sample
	close() error
}

// errRemoveMiss is returned by peers whose delete reports "not found".
var errRemoveMiss = errors.New("remove: key not found")

// errAddFull is returned by peers whose insert can fail (cuckoo filter full).
var errAddFull = errors.New("add: filter full")

// buildConfig is what a spec needs to build a fresh instance.
type buildConfig struct {
	n       int    // number of keys that will be added
	removes int    // number of keys removed (the first ones in add order)
	dir     string // directory for file-backed systems
	rep     int    // repetition number, to make file names unique
	// sbfHint is the initial capacity passed to BoomFilters' ScalableBloomFilter.
	sbfHint int
	// layout is the counter layout of this project's rows ("" = default).
	layout string
}

// spec describes a system and how to build it.
type spec struct {
	id   string // name used by -systems and in the tables
	desc string // one-line description printed in the legend
	new  func(cfg buildConfig) (system, error)

	// concurrentWrite: add and remove are safe from several goroutines at
	// once (the parallel table times them); otherwise they are "n/a" there.
	concurrentWrite bool
	// concurrentRead: contains is safe from several goroutines at once
	// while nobody writes; otherwise parallel contains is "n/a".
	concurrentRead bool
	// canRemove: the instances implement remover.
	canRemove bool

	// newRunner, if set, replaces new: the system runs whole repetitions
	// through the returned repRunner (built once per run). An error means
	// the system cannot run here (say, no C compiler): it is skipped with
	// the error as the message. progress reports steps on stderr.
	newRunner func(o options, ks *keySet, progress func(string, ...any)) (repRunner, error)
	// singleOnly: the system has no row in the parallel table.
	singleOnly bool
}

// allSpecs lists every system in table order.
func allSpecs() []spec {
	return []spec{
		oursFileSpec,
		oursMemSpec,
		oursOriginalSpec,
		oursOriginalExclSpec,
		oursFloorSpec,
		oursFloorCASSpec,
		oursBatchSpec,
		oursExclBatchSpec,
		bloomv3Spec,
		boomCountingSpec,
		boomScalableSpec,
		blobloomSpec,
		blobloomSyncSpec,
		blobloomBigSpec,
		blobloomDenseSpec,
		oursWalkSpec,
		cuckooSpec,
		cOriginalSpec,
	}
}

// selectSpecs filters allSpecs by a comma-separated list of ids ("" or
// "all" = every system). Unknown ids are an error.
func selectSpecs(list string) ([]spec, error) {
	all := allSpecs()
	list = strings.TrimSpace(list)
	if list == "" || list == "all" {
		return all, nil
	}
	want := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.ContainsFunc(all, func(sp spec) bool { return sp.id == s }) {
			return nil, fmt.Errorf("unknown system %q (known: %s)", s, specIDs())
		}
		want[s] = true
	}
	var out []spec
	for _, sp := range all {
		if want[sp.id] {
			out = append(out, sp)
		}
	}
	return out, nil
}
