// Floor 4 (operations) of package scaling: AddBatch and RemoveBatch.

package scaling

import (
	"errors"
	"fmt"

	"github.com/dablooms/dablooms/header"
)

// BatchError is the error of AddBatch: the key at Index failed with Err,
// the keys before it were added, the keys after it were not tried.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return fmt.Sprintf("key %d of the batch: %v", e.Index, e.Err) }

func (e *BatchError) Unwrap() error { return e.Err }

// modifyAhead is how many keys ahead of the one being applied a batch
// modification hashes its key and prefetches its block, so that the block's
// cache miss overlaps the compare-and-swaps of the keys before it.
const modifyAhead = batchDepth

// AddBatch adds keys[i] with ids[i] for every i, in order, faster than
// calling Add in a loop: it hashes each key and prefetches its block
// modifyAhead keys before it applies it, so the cache misses of many keys
// overlap. Each key is added exactly as Add does (crash records, the
// dirty-first rule, routing, growth in the middle of the batch, several
// processes). It stops at the first key that fails and returns a
// *BatchError naming it; the keys before it are added. On a shared
// handle it does not allocate.
//
// On an exclusive handle (Options.Exclusive) a run of 4096 or more keys
// that an Add would route to the newest filter (no late ids), as many as
// it has room for, is swept: hashed, sorted by block, and added in that
// order, so the stores walk the counters from first to last, each page of the file is
// dirtied once per batch, and a large store loads many times faster than
// in the batch's order (docs/PERFORMANCE.md, "A billion keys"). The result
// is the same as adding the keys in order; the sweep takes 16 bytes a key
// of memory while it runs (up to 1 MiB of it kept for the next batch). Lookups meanwhile see each key once it is
// added, as with Add; a kill in the middle leaves some of the run's keys
// added, in no order the caller can tell, and each of them whole.
func (f *Filter) AddBatch(keys [][]byte, ids []uint64) error {
	return f.modifyBatchLive(keys, ids, header.OpAdd, nil)
}

// RemoveBatch removes keys[i], added with ids[i], for every i, faster than
// calling Remove in a loop (see AddBatch). Each key is removed exactly as
// Remove does; if results is not nil (it must then be as long as keys),
// results[i] is Remove's error for key i (nil, ErrNotPresent, ErrAmbiguous,
// …). It returns how many keys were removed, and an error only for the
// batch as a whole (a closed or read-only Filter, mismatched lengths, or
// an error that stops every key, such as a failed sync of the dirty mark:
// a *BatchError naming the key, results past it left as they were).
func (f *Filter) RemoveBatch(keys [][]byte, ids []uint64, results []error) (int, error) {
	if results != nil && len(results) < len(keys) {
		return 0, fmt.Errorf("%w: %d results for %d keys", ErrInvalidOption, len(results), len(keys))
	}
	var removed int
	err := f.modifyBatchLive(keys, ids, header.OpRemove, func(i int, err error) bool {
		if results != nil {
			results[i] = err
		}
		if err == nil {
			removed++
		}
		return err == nil || errors.Is(err, ErrNotPresent) || errors.Is(err, ErrAmbiguous)
	})
	return removed, err
}

// modifyBatch applies op to every key; each key's result goes to done
// (nil: the first error stops the batch), which says whether to go on.
func (f *Filter) modifyBatch(keys [][]byte, ids []uint64, op uint64, done func(i int, err error) bool) error {
	if len(ids) != len(keys) {
		return fmt.Errorf("%w: %d ids for %d keys", ErrInvalidOption, len(ids), len(keys))
	}
	c, err := f.writableChain()
	if err != nil {
		return err
	}
	g, err := f.w.startOp(f, 0) // one for the whole batch
	if err != nil {
		return err
	}
	defer f.w.endOp(f, g)
	if op != header.OpAdd || len(keys) < sweepMin {
		return f.modifyInOrder(c, keys, ids, op, done, 0)
	}
	// Long runs of Adds bound for the newest filter, on the only writer:
	// swept (sweep.go); the keys between them in order.
	// (Only an exclusive handle sweeps, under its hold: the buffer is its
	// own; a shared handle's is nil, and sweepRun never sweeps there.)
	buf := f.w.sweepBuffer()
	defer func() {
		if buf != nil && cap(*buf) > sweepKeep {
			*buf = nil // a long batch's buffer is not kept
		}
	}()
	for i := 0; i < len(keys); {
		k, lo, hi, sweep := f.sweepRun(c, ids[i:])
		if sweep {
			swept, err := f.sweepAdd(c, keys[i:i+k], lo, hi, buf)
			if err != nil {
				return &BatchError{Index: i, Err: err}
			}
			if swept {
				i += k
				continue
			}
		}
		j := min(i+max(k, 1), len(keys))
		if err := f.modifyInOrder(c, keys[i:j], ids[i:j], op, done, i); err != nil {
			return err
		}
		i = j
		if i == len(keys) {
			break // every key was added: no chain to read again
		}
		if c, err = f.current(); err != nil {
			return &BatchError{Index: i, Err: err}
		}
	}
	return nil
}

// modifyInOrder applies op to every key in the batch's order; the keys are
// those of the batch from index base on.
func (f *Filter) modifyInOrder(c *chain, keys [][]byte, ids []uint64, op uint64, done func(i int, err error) bool, base int) error {
	var err error
	var ring [modifyAhead]hashes
	n := len(keys)
	for j := range min(n, modifyAhead) {
		ring[j] = f.hash(c, keys[j])
		prefetchFor(c, ring[j], ids[j], op)
	}
	for i := range n {
		h := ring[i%modifyAhead]
		if j := i + modifyAhead; j < n {
			ring[j%modifyAhead] = f.hash(c, keys[j])
			prefetchFor(c, ring[j%modifyAhead], ids[j], op)
		}
		if c, err = f.current(); err == nil {
			if op == header.OpAdd {
				err = f.add(c, h, ids[i], target{})
			} else {
				err = f.remove(c, h, ids[i], target{})
			}
		}
		switch {
		case done == nil && err != nil:
			return &BatchError{Index: base + i, Err: err}
		case done != nil && !done(base+i, err):
			return &BatchError{Index: base + i, Err: err}
		}
	}
	return nil
}

// prefetchFor starts the cache miss of the block a modification of the key
// will change: the newest filter's for an Add (where it almost always
// goes), those of the filters whose id range holds id for a Remove.
func prefetchFor(c *chain, h hashes, id uint64, op uint64) {
	if op == header.OpAdd {
		m := c.f[len(c.f)-1]
		m.cf.PrefetchProbe(m.cf.Prepare(m.keyHash(h)))
		return
	}
	for _, m := range c.f {
		if m.holds(id) {
			m.cf.PrefetchProbe(m.cf.Prepare(m.keyHash(h)))
		}
	}
}

// modifyBatchLive is modifyBatch on f.live(): when the file is replaced in
// the middle of the batch, the batch goes on from the key it stopped at on
// the file that replaced it.
func (f *Filter) modifyBatchLive(keys [][]byte, ids []uint64, op uint64, done func(i int, err error) bool) error {
	if len(ids) != len(keys) {
		return fmt.Errorf("%w: %d ids for %d keys", ErrInvalidOption, len(ids), len(keys))
	}
	start := 0
	for {
		f = f.live()
		d := done
		if done != nil {
			d = func(i int, err error) bool { return done(start+i, err) }
		}
		err := f.modifyBatch(keys[start:], ids[start:], op, d)
		if be, ok := err.(*BatchError); ok { // (errors.As would allocate)
			if f.again(be.Err) {
				start += be.Index
				continue
			}
			be.Index += start
			return be
		}
		if !f.again(err) {
			return err
		}
	}
}
