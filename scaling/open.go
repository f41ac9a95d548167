// Floor 6 (making a handle) of package scaling: Create, Open and Close.

package scaling

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/seqnum"
)

// Create creates a new file at path with the given options (nil = defaults)
// and opens it read-write. It refuses an existing file unless opts.Overwrite.
func Create(path string, opts *Options) (*Filter, error) {
	o, p, first, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	fo := o.fileOptions()
	var fz *Frozen
	if o.Overwrite {
		// A file that tells its handles of a replacement is replaced while
		// they have it open; they move to the new one (see Freeze).
		switch fz, err = Freeze(path, o.LockTimeout); {
		case err == nil:
			fo.LiveOld = true
			defer fz.Abort() // no-op after Done
		case !errors.Is(err, ErrNotLive) && !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
	}
	mf, err := mmapfile.Create(path, first.Offset+first.Length, fo)
	if err != nil {
		return nil, err
	}
	f, err := create(mf, mf, p, first, &o)
	if err != nil {
		mf.Close() // removes the file made aside; path is as it was
		return nil, err
	}
	if fz != nil {
		fz.Done()
	}
	f.succ.path = path
	f.succ.reopen = OpenOptions{Reserve: o.Reserve, AllowNetworkFS: o.AllowNetworkFS, LockTimeout: o.LockTimeout,
		knobs: o.knobs}
	if o.Exclusive {
		// The file is at the path already: another handle may open it,
		// or even replace it, before it is held.
		if h := knob(o.knobs).CreateHook; h != nil {
			h(path)
		}
		if err := f.takeExclusive(createFlags()); err != nil {
			f.Close()
			if errors.Is(err, errRetry) {
				err = fmt.Errorf("%w: another file was put at the path first", ErrBusy)
			}
			return nil, fmt.Errorf("create %s: made, but not held exclusively: %w", path, err)
		}
	}
	return f, nil
}

// createFlags are the feature flags of a new file (header.FlagPageSums
// too when its filters have check pages: createWith).
func createFlags() uint64 {
	return header.FlagLiveReplace | header.FlagUndoBlock | header.FlagRecordCounts
}

// NewMemory returns a Filter with the same behaviour held in ordinary memory:
// nothing is written to disk, and the race detector sees every access.
func NewMemory(opts *Options) (*Filter, error) {
	o, p, first, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	f, err := create(mmapfile.NewHeap(first.Offset+first.Length), nil, p, first, &o)
	if err == nil && o.Exclusive {
		err = f.takeExclusive(createFlags())
	}
	return f, err
}

// createRegion initialises a new store in an empty region r of at least
// header.DataOffset bytes (the crash model of recover's tests, through
// internal/regionhook). The region must be zero.
func createRegion(r mmapfile.Region, opts *Options) (*Filter, error) {
	o, p, first, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	if err := r.Grow(first.Offset + first.Length); err != nil {
		return nil, err
	}
	return create(r, nil, p, first, &o)
}

// prepare validates the options and sizes the first filter.
func prepare(opts *Options) (Options, *header.Params, header.FilterDesc, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return o, nil, header.FilterDesc{}, err
	}
	p, first, err := newParams(&o)
	return o, p, first, err
}

func newParams(o *Options) (*header.Params, header.FilterDesc, error) {
	p := &header.Params{
		Capacity: o.Capacity, ErrorRate: o.ErrorRate, GrowthFactor: o.GrowthFactor,
		TighteningRatio: o.TighteningRatio, Seed: o.Seed,
		HashID: header.HashXXH64Seeded, LayoutID: uint32(o.Layout),
	}
	if p.Seed == 0 {
		var b [8]byte
		rand.Read(b[:])
		p.Seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	if err := header.ValidateParams(p); err != nil {
		return nil, header.FilterDesc{}, err
	}
	first, err := describe(p, 0, header.DataOffset, 0, false, true)
	return p, first, err
}

func create(r mmapfile.Region, mf *mmapfile.File, p *header.Params, first header.FilterDesc, o *Options) (*Filter, error) {
	return createWith(r, mf, p, []header.FilterDesc{first}, o, nil)
}

// createWith initialises a new store with the given directory. init, if not
// nil, fills counters and hot words before anything is synced and published.
func createWith(r mmapfile.Region, mf *mmapfile.File, p *header.Params, dir []header.FilterDesc, o *Options, init func(f *Filter) error) (*Filter, error) {
	m := &header.Meta{Generation: 1, Params: *p, Created: time.Now().UnixNano(), Filters: dir}
	m.Flags |= createFlags()
	sums := len(dir) > 0
	for _, d := range dir {
		if d.HasCounts() {
			m.Flags |= header.FlagExtras
		}
		sums = sums && d.Sums > 0
	}
	if sums {
		m.Flags |= header.FlagPageSums
	}
	f := &Filter{mapping: mapping{r: r, file: mf}, settings: settings{params: *p, timeout: o.LockTimeout, tk: knobsOf(o.knobs)}, slotState: slotState{slot: -1}}
	f.setWriter(sharedWriter{})
	f.setBootID(knob(o.knobs).BootID)
	if err := f.mapHot(); err != nil {
		return nil, err
	}
	// Initial state: clean at epoch 1, disk_seqnum 0 = mem_seqnum 0.
	atomic.StoreUint64(f.words.State, seqnum.Pack(1, seqnum.Clean))
	for i := range dir {
		f.initFilterLine(i)
	}
	if init != nil {
		if err := init(f); err != nil {
			return nil, err
		}
	}
	if sums {
		for i := range dir {
			if err := writeAllSums(f.r, &dir[i], init == nil); err != nil {
				return nil, err
			}
		}
	}
	if err := f.sync(0, f.r.Size()); err != nil {
		return nil, err
	}
	if err := f.writeMeta(m); err != nil {
		return nil, err
	}
	atomic.StoreUint64(f.published, uint64(len(dir)))
	if err := f.r.Sync(header.HotOffset, header.DataOffset-header.HotOffset); err != nil {
		return nil, err
	}
	if err := f.loadChain(m); err != nil {
		return nil, err
	}
	if mf != nil {
		// Only a whole file goes to the path (see mmapfile.Create).
		if err := mf.Publish(); err != nil {
			return nil, err
		}
	}
	if err := f.claimSlot(); err != nil {
		return nil, err
	}
	return f, nil
}

// Open opens an existing file. Its parameters come from the file.
func Open(path string, opts *OpenOptions) (*Filter, error) {
	var o OpenOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case o.LockTimeout < 0:
		return nil, &OptionError{Field: "LockTimeout", Value: o.LockTimeout, Reason: "must not be negative"}
	case o.Reserve < 0:
		return nil, &OptionError{Field: "Reserve", Value: o.Reserve, Reason: "must not be negative"}
	}
	for tries := 0; ; tries++ {
		mf, err := mmapfile.Open(path, withFailpoints(&mmapfile.Options{
			ReadOnly: o.ReadOnly, Reserve: o.Reserve, AllowNetworkFS: o.AllowNetworkFS,
			OpenLock: header.OpenLockOffset, LockTimeout: cmp.Or(o.LockTimeout, DefaultLockTimeout),
		}, o.knobs))
		if err != nil {
			return nil, err
		}
		f, err := open(mf, mf, &o)
		if errors.Is(err, errRetry) && tries < 10 {
			// Replaced while it was being opened: open the new file.
			mf.Close()
			continue
		}
		if err != nil {
			mf.Close()
			if errors.Is(err, errRetry) {
				err = fmt.Errorf("%w: it was replaced %d times while it was being opened", ErrBusy, tries+1)
			}
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		f.succ.path, f.succ.reopen = path, o
		return f, nil
	}
}

// finishCutShort claims the handle's slot and finishes a growth or a
// retirement whose process died before it was done (listed is the number
// of filters the directory lists, m what is published).
//
// It finishes them only if the growth lock is free now. A live holder (a
// growth or retirement in progress, a rewrite's freeze, an exclusive
// writer) finishes them itself or leaves them to the next growth, which
// publishes whatever the directory lists (grow) and retires what the hot
// word says (retireBefore). Open must not wait for it: a handle moving to
// a replacement file opens it while its lookups wait for the move, and
// the holder may be an exclusive handle whose own goroutine is one of
// those lookups (TestMoveDoesNotWaitForAHolder).
func (f *Filter) finishCutShort(m *header.Meta, listed int) error {
	if listed > len(m.Filters) || f.metaCutShort() {
		// The directory lists a filter that is not published, or the
		// copies differ: a growth its process died in (or one in
		// progress).
		if err := f.ifGrowthLockFree(func() error { return f.grow(0, growFinish) }); err != nil {
			return err
		}
	}
	if err := f.claimSlot(); err != nil {
		return err
	}
	if atomic.LoadUint64(f.retired) > m.Retired {
		// A retirement its process did not finish (or one in progress):
		// the hot word retired filters the directory still lists.
		return f.ifGrowthLockFree(func() error { _, err := f.RetireBefore(0); return err })
	}
	return nil
}

// ifGrowthLockFree runs fn, which takes the growth lock, only if the lock
// is free now (see finishCutShort). fn takes it again through this
// descriptor, which holds it already, at once.
func (f *Filter) ifGrowthLockFree(fn func() error) error {
	if f.file == nil {
		return fn()
	}
	if f.file.Lock(header.GrowthLockOffset, true, 0) != nil {
		return nil // a live holder finishes it
	}
	defer f.file.Unlock(header.GrowthLockOffset)
	return fn()
}

// openRegion opens a store in an existing region (see createRegion).
func openRegion(r mmapfile.Region, opts *OpenOptions) (*Filter, error) {
	var o OpenOptions
	if opts != nil {
		o = *opts
	}
	return open(r, nil, &o)
}

func open(r mmapfile.Region, mf *mmapfile.File, o *OpenOptions) (*Filter, error) {
	f := &Filter{mapping: mapping{r: r, file: mf, ro: r.ReadOnly() || o.ReadOnly}, settings: settings{timeout: o.LockTimeout, tk: knobsOf(o.knobs)}, slotState: slotState{slot: -1}}
	f.setWriter(sharedWriter{})
	if f.timeout == 0 {
		f.timeout = DefaultLockTimeout
	}
	f.setBootID(knob(o.knobs).BootID)
	// Everything that reads the mapping during open runs under a fault
	// guard: a file truncated underneath gives an error, not a SIGBUS.
	var unclean *StateError
	err := mmapfile.Guard(func() error {
		if f.r.Size() < header.DataOffset {
			// Too short for the hot pages: say what the file is.
			if _, _, err := f.readDirectory(0); err != nil {
				return err
			}
			return &header.CorruptionError{Offset: 0, Filter: -1, Field: "size", Reason: fmt.Sprintf("file has %d bytes", f.r.Size()), Err: header.ErrNotDablooms}
		}
		if err := f.mapHot(); err != nil {
			return err
		}
		m, listed, err := f.readPublished()
		if err != nil {
			return err
		}
		f.params = m.Params
		if err := f.validateHot(m); err != nil {
			return err
		}
		if atomic.LoadUint64(f.replaced) == header.ReplaceDone {
			// Replaced since mmapfile.Open found it at the path; unless
			// it is still there, which no rewrite leaves.
			same := true
			if f.file != nil {
				var err error
				if same, err = f.file.SamePath(); err != nil {
					return err
				}
			}
			if same {
				return &header.CorruptionError{Offset: header.ReplacedOffset, Filter: -1, Field: "replaced",
					Reason: "marked replaced, but it is the file at its path", Err: header.ErrCorrupt}
			}
			return errRetry
		}
		if err := f.loadChain(m); err != nil {
			return err
		}
		// Decide before writing anything: a refused open leaves the file as it was.
		if c, why := f.condition(); !o.AllowUnclean && (c == Interrupted || c == Dirty) {
			unclean = &StateError{Condition: c, Detail: why}
			return nil
		}
		if !f.ro {
			if err := f.finishCutShort(m, listed); err != nil {
				return err
			}
		}
		if o.Exclusive {
			return f.takeExclusive(m.Flags)
		}
		return nil
	})
	if err == nil && unclean != nil {
		err = unclean
	}
	if err != nil {
		f.mu.Lock()
		f.releaseSlot()
		f.mu.Unlock()
		return nil, err
	}
	return f, nil
}

func (f *Filter) setBootID(s string) {
	if s == "" {
		s = SystemBootID()
	}
	f.bootID = ParseBootID(s)
}

// ParseBootID turns a boot identity into the 16 bytes recorded with the
// dirty mark (header.ParseBootID).
func ParseBootID(s string) [16]byte { return header.ParseBootID(s) }

// SystemBootID returns the machine's boot identity (mmapfile.BootID). Without
// one it returns a constant, so every unflushed file counts as dirty after a
// process restart too: safe.
func SystemBootID() string { return mmapfile.BootID() }

// validateHot checks the hot words against the directory: they are hostile
// input too.
func (f *Filter) validateHot(m *header.Meta) error {
	st := atomic.LoadUint64(f.words.State)
	if ep, _ := seqnum.Unpack(st); !seqnum.ValidEpoch(ep) {
		return &header.CorruptionError{Offset: header.StateOffset, Filter: -1, Field: "state", Reason: fmt.Sprintf("epoch %d", ep), Err: header.ErrCorrupt}
	}
	pub := atomic.LoadUint64(f.published)
	if pub > m.Retired+header.MaxFilters {
		return &header.CorruptionError{Offset: header.PublishedOffset, Filter: -1, Field: "published", Reason: fmt.Sprintf("%d filters", pub), Err: header.ErrCorrupt}
	}
	if w := atomic.LoadUint64(f.replaced); w > header.ReplaceDone || (w != header.ReplaceNone && m.Flags&header.FlagLiveReplace == 0) {
		return &header.CorruptionError{Offset: header.ReplacedOffset, Filter: -1, Field: "replaced", Reason: fmt.Sprintf("replaced word %d", w), Err: header.ErrCorrupt}
	}
	if r := atomic.LoadUint64(f.retired); r >= pub {
		return &header.CorruptionError{Offset: header.RetiredOffset, Filter: -1, Field: "retired", Reason: fmt.Sprintf("%d filters retired of %d published", r, pub), Err: header.ErrCorrupt}
	}
	if err := f.retiredWhenClean(m); err != nil {
		return err
	}
	for _, d := range m.Filters {
		i := d.Slot
		if items := int64(atomic.LoadUint64(&header.LineAt(f.hot, i).Items)); items < 0 {
			return &header.CorruptionError{Offset: header.FilterLineOffset(i), Filter: i, Field: "items", Reason: fmt.Sprintf("negative item count %d", items), Err: header.ErrCorrupt}
		}
	}
	return nil
}

// Close releases the writer slot and the file. It does not flush: call
// Flush first to make the changes durable. It waits for the modifications in
// progress; a lookup running concurrently with Close may report false, but
// never faults: the address range is returned to the system once the last
// such lookup has returned (see mapKeep). Close is idempotent. If the file
// was replaced while open, Close closes the handle on the new file too.
func (f *Filter) Close() error {
	f.closeOnce.Do(f.shutdown)
	f.succ.mu.Lock()
	f.succ.userClosed = true
	n := f.succ.next.Load()
	f.succ.mu.Unlock()
	if n != nil {
		// The old file's internals were shut down when f moved; what
		// counts is the handle the calls went to.
		return n.Close()
	}
	return f.closeErr
}

// shutdown releases f's slot, mapping and descriptor, once the
// modifications in progress have returned: at Close, or when f has moved to
// the file that replaced its own (successor.go). It detaches the mapping as
// I15 and I16 require.
func (f *Filter) shutdown() {
	f.closed.Store(true)
	for i := range f.guards {
		for f.guards[i].n.Load() != 0 {
			time.Sleep(10 * time.Microsecond)
		}
	}
	for i := range f.rec { // (sharedFast's guard is its record's claim)
		for atomic.LoadUint64(&f.rec[i].busy) != 0 {
			time.Sleep(10 * time.Microsecond)
		}
	}
	// (An exclusive handle's modifications hold wmu and see closed under it.)
	defer f.w.holdOps(f)()
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.chain.Load(); c != nil && !f.ro {
		for _, m := range c.f {
			m.releaseQuota()
		}
	}
	f.releaseSlot()
	f.w.closeWriter(f)
	keep := f.chain.Swap(nil).keep
	// (UnmapAtClose: unmap at once, as if lookups were not protected by
	// mapKeep; SkipDetachedMark: detach without telling lookups in flight.
	// The negative controls of TestCloseDuringLookups and
	// TestLookupsSurviveReplacement.)
	if d, ok := f.r.(mmapfile.Detacher); ok && !knob(f.tk).UnmapAtClose {
		if !knob(f.tk).SkipDetachedMark {
			keep.detached.Store(true) // before the zero pages (see mapKeep)
		}
		f.closeErr = d.Detach()
		// Unmap once no chain (so no lookup) is left.
		runtime.AddCleanup(keep, func(r mmapfile.Region) { r.Close() }, f.r)
	} else {
		f.closeErr = f.r.Close()
	}
}
