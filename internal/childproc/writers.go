package childproc

import (
	"errors"
	"fmt"
	"time"
)

// The multi-writer workloads (scaling's and recover's tests): writer p of n
// adds keys "p<p>-<i>" with ids that either interleave with the others'
// (i·n + p: ids "interleaved") or lie in its own block (p·10^9 + i: ids
// "blocks").

// WriterKey is writer p's i-th key.
func WriterKey(p, i int) []byte { return fmt.Appendf(nil, "p%d-%d", p, i) }

// WriterID is the id of writer p's i-th key, of n writers.
func WriterID(ids string, p, i, n int) uint64 {
	if ids == "blocks" {
		return uint64(p)*1_000_000_000 + uint64(i)
	}
	return uint64(i*n + p)
}

// SkewedStart runs add(0), …, add(keys-1) for writer p of n: after barrier
// 0 (every writer is ready) writer 0 alone adds its first skew keys, and
// barrier 1 lets every writer go on.
func SkewedStart(ctl *Shm, p, n, skew, keys int, add func(i int) error) error {
	if err := Barrier(ctl, 0, n); err != nil {
		return err
	}
	next := 0
	if p == 0 {
		for ; next < skew; next++ {
			if err := add(next); err != nil {
				return err
			}
		}
	}
	if err := Barrier(ctl, 1, n); err != nil {
		return err
	}
	for ; next < keys; next++ {
		if err := add(next); err != nil {
			return err
		}
	}
	return nil
}

// KeepUp waits until no writer q of n is more than lag operations behind
// count, the count of this writer's next operation, by the shared word
// progress(q), or until stop reports true (nil: never); lag 0 waits for
// nothing.
func KeepUp(ctl *Shm, progress func(q int) int, n, count, lag int, stop func() bool) error {
	if lag <= 0 {
		return nil
	}
	deadline := time.Now().Add(time.Minute)
	for q := range n {
		for int(ctl.Load(progress(q)))+lag < count && (stop == nil || !stop()) {
			if ctl.Load(CtlAbort) != 0 {
				return errors.New("aborted by the parent (another child failed)")
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("writer %d did not keep up: %d at word %d, this writer at %d", q, ctl.Load(progress(q)), progress(q), count)
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	return nil
}
