// Floor 3 (the file's coordination) of package scaling: picking up what
// other handles did: new filters, retirements, rewrites.

package scaling

import (
	"sync/atomic"

	"github.com/dablooms/dablooms/header"
)

// stale reports whether another handle or process has published filters
// or retired some since c was built, or a rewrite is replacing the file
// (I12; the three words share a line: one miss at most).
func (f *Filter) stale(c *chain) bool {
	return f.chainStale(c) || (atomic.LoadUint64(f.replaced) != header.ReplaceNone && !knob(f.tk).SkipReplaceCheck)
}

func (f *Filter) chainStale(c *chain) bool {
	return atomic.LoadUint64(f.published) > c.end || atomic.LoadUint64(f.retired) > c.retired
}

// current returns the chain, first picking up filters another handle or
// process has published since.
func (f *Filter) current() (*chain, error) {
	c := f.chain.Load()
	if c == nil {
		return nil, ErrClosed
	}
	if f.stale(c) {
		if err := f.refresh(); err != nil {
			return nil, err
		}
		if c = f.chain.Load(); c == nil {
			// Closed since (another goroutine moved the handle).
			return nil, ErrClosed
		}
	}
	return c, nil
}

func (f *Filter) refresh() error {
	switch atomic.LoadUint64(f.replaced) {
	case header.ReplaceNone:
	case header.ReplaceFreezing:
		// Nothing changes the file until the rewrite ends: lookups go on
		// with the chain they have (writers wait, see waitReplace).
		if c := f.chain.Load(); c != nil && !f.chainStale(c) {
			return nil
		}
	default:
		return f.move()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chain.Load()
	if c == nil {
		return ErrClosed
	}
	if !f.chainStale(c) {
		return nil
	}
	m, _, err := f.readPublished()
	if err != nil {
		return err
	}
	return f.loadChain(m)
}

// routeAgain is how an Add whose filter was retired under it starts over:
// it picks up the new chain. It leaves the filter's line alone (its
// admission is not released: the entry may already hold a new filter, and
// a pending count too high only makes a filter look fuller).
func (f *Filter) routeAgain() (*chain, error) {
	if err := f.goneErr(nil); err != nil {
		return nil, err
	}
	if err := f.refresh(); err != nil {
		return nil, err
	}
	return f.current()
}

// goneErr is the error of an operation that backed out of a member that is
// gone: ErrNotPresent for a Remove whose filter was retired, or the outcome
// of waiting for a rewrite (errRetry: start over).
func (f *Filter) goneErr(retired error) error {
	if atomic.LoadUint64(f.replaced) != header.ReplaceNone {
		return f.waitReplace()
	}
	return retired
}
