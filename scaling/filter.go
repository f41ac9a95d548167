package scaling

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/seqnum"
)

// Filter is a scalable counting Bloom filter stored in a file (or in memory).
// All methods are safe for concurrent use by goroutines; several processes
// may open the same file (see the package documentation).
type Filter struct {
	r       mmapfile.Region
	file    *mmapfile.File // nil in memory mode
	ro      bool
	params  header.Params
	timeout time.Duration
	bootID  [16]byte
	tk      *testknobs.Knobs // the module's tests (testknobs.go); nil: none

	hotWords // the shared words every operation reads

	// w is the handle's writer (writer.go), chosen before it is shared;
	// an exclusive handle's holds the state only it has (exclusive.go).
	w writer

	succ successor // moving to a file that replaced this one (replace.go)

	chain atomic.Pointer[chain] // nil once closed

	// The handle's locks, in the order they are taken: a holder of one
	// takes only those after it.
	//
	//  1. the exclusive writer's hold (exclWriter.wmu; holdOps): its
	//     operations, Flush, RetireBefore and Close;
	//  2. growMu, then the file's growth lock (lockGrowth; Flush takes it
	//     shared);
	//  3. flushMu, then the file's flush lock (lockFlush);
	//  4. mu;
	//  5. leaves, under which nothing of this handle's is taken: a quota
	//     shard's mu (quota.go), succ.mu (replace.go; a successor's Open
	//     takes only the successor's locks).
	mu       sync.Mutex // growth, meta, refresh, flush, close
	growMu   sync.Mutex // this handle's holders of the growth lock
	flushing            // flushMu: this handle's flushes

	metaCopy  // the metadata copy this handle wrote last (under mu)
	slotState // the handle's writer slot, records and guards
	closing   // Close's state

	limit lazyLimit // filterLimit
}

// hotWords are the words of the hot page (and the state words) a Filter
// reads on every operation, mapped once (mapHot).
type hotWords struct {
	hot       []uint64 // words [HotOffset, DataOffset)
	words     seqnum.Words
	published *uint64 // the chain's end: filters ever appended
	retired   *uint64 // filters ever retired from the chain's front
	replaced  *uint64 // the replaced word (see replace.go); the exclusive writer's own if exclusive
}

// metaCopy is which of the two metadata copies holds the newest
// generation, as this handle last read or wrote it (under mu).
type metaCopy struct {
	metaWhich  int
	generation uint64
}

// closing is the state of Close: closed is set first, then the handle
// waits for its operations and releases the file once (closeOnce).
type closing struct {
	closed    atomic.Bool
	closeErr  error
	closeOnce sync.Once
}

// flushing is the state of the handle's flushes (flush.go, pagesums.go).
type flushing struct {
	flushMu    sync.Mutex         // this handle's flushes
	sumBuf     *[pageWords]uint64 // Flush's copy of a page to checksum (under mu)
	syncFailed atomic.Bool        // a sync failed: Flush refuses from then on (ErrSyncFailed)
}

// slotState is the handle's writer slot (slot.go), the records of its
// operations in flight, and the guards Close waits for.
type slotState struct {
	slot   int // writer slot, -1 if read-only
	rec    [header.RecordsPerSlot]record
	guards [16]guard
}

// lazyLimit is chainLimit of the file's parameters, worked out once
// (filterLimit).
type lazyLimit struct {
	once sync.Once
	n    int
}

// mapKeep keeps the region mapped while anything can still read it (I16,
// docs/PROTOCOLS.md). Lookups do not register with the Filter (an atomic
// read-modify-write per lookup would serialise their cache misses):
// instead every chain of a Filter points to one mapKeep (the first chain
// makes it, later ones take it over), and a lookup holds its chain until
// it returns. Close detaches the region at once (a mapped file's pages
// become zero pages) and drops the Filter's chain; a cleanup unmaps it.
//
// A lookup that read zeros cannot be told from one that found the key
// absent: detached is set before the zero pages go in, and a lookup that
// answers "absent" checks it afterwards (answered) and asks again if set
// (I15).
type mapKeep struct {
	r        mmapfile.Region
	detached atomic.Bool
}

// answered reports whether an "absent" answer read from the chain holding
// k can stand: false if the region was detached (from before the reads).
// loadFence orders the lookup's loads of the counters before the load of
// detached (see fence_*.go): a load that saw a zero page was served after
// the detach, which followed the store of detached.
func (k *mapKeep) answered() bool {
	loadFence()
	return !k.detached.Load()
}

type guard struct {
	n atomic.Int64
	_ [56]byte
}

// record is one in-flight operation record in the mapped slot.
type record struct {
	rec  *header.Record // the mapped words (Word, New: the evidence of the CAS in doubt)
	busy atomic.Bool    // claimed by a goroutine of a shared handle
	// A line each, as when the record held its eight word pointers: the
	// goroutines of a handle claim busy flags at once, and four records to
	// a line would make their claims contend.
	_ [64 - 16]byte
}

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
func createFlags() uint64 { return header.FlagLiveReplace | header.FlagUndoBlock }

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
	f := &Filter{r: r, file: mf, params: *p, timeout: o.LockTimeout, slotState: slotState{slot: -1}, tk: knobsOf(o.knobs)}
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
	if listed > len(m.Filters) {
		// The directory lists a filter that is not published: a growth
		// its process died in (or one in progress).
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
	f := &Filter{r: r, file: mf, ro: r.ReadOnly() || o.ReadOnly, timeout: o.LockTimeout, slotState: slotState{slot: -1}, tk: knobsOf(o.knobs)}
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

// readMeta reads the whole directory: the newest valid metadata copy, with
// every filter it lists. Only a holder of the growth lock (or an open of a
// file nobody else can change) may rely on it: the directory can list a
// filter whose growth is not finished (see readPublished).
func (f *Filter) readMeta() (*header.Meta, error) {
	m, _, err := f.readDirectory(0)
	return m, err
}

// readPublished reads the directory as far as it is published: the first
// published filters (at least one) of the newest valid metadata copy, and
// how many the copy lists. A growth appends a filter to the directory before
// it publishes the count, so a filter past the count may be half made:
// nothing may route an Add to it or wait for its counters.
//
// Other processes may be rewriting a metadata copy while it is read, so a
// read that finds no valid copy listing the published filters is retried
// (a copy is torn only while a writer encodes it, and a writer always leaves
// the other copy whole) until the lock timeout; only then is it an error.
func (f *Filter) readPublished() (*header.Meta, int, error) {
	deadline := time.Now().Add(max(f.timeout, time.Second))
	delay := 10 * time.Microsecond
	unheld := 0 // reads that failed while no other handle held the growth lock
	for {
		want := max(atomic.LoadUint64(f.published), 1)
		m, listed, err := f.readDirectory(want)
		if err == nil || f.file == nil || errors.Is(err, mmapfile.ErrClosed) || time.Now().After(deadline) {
			return m, listed, err
		}
		// Metadata is written only under the growth lock. If nobody holds
		// it, a write that tore this read has ended since: one more read
		// sees both copies at rest, and a second failure is the file's.
		held, herr := f.file.Held(header.GrowthLockOffset)
		switch {
		case herr != nil:
			return nil, listed, err
		case held:
			unheld = 0
		case unheld > 0:
			return nil, listed, err
		default:
			unheld++
		}
		time.Sleep(delay)
		delay = min(2*delay, time.Millisecond)
	}
}

// readDirectory decodes the newest valid metadata copy from a private copy
// of its bytes (decoding live memory could check a checksum over one
// version and parse fields of the next) and cuts its directory to the first
// want filters (0: all). It returns how many filters the copy lists.
func (f *Filter) readDirectory(want uint64) (*header.Meta, int, error) {
	size := f.r.Size()
	if f.file != nil {
		s, err := f.file.Refresh()
		if err != nil {
			return nil, 0, err
		}
		size = s
	}
	live, err := f.r.Bytes(0, min(size, 2*header.MetaSize))
	if err != nil {
		return nil, 0, err
	}
	var buf [2 * header.MetaSize]byte
	b := buf[:copy(buf[:], live)]
	// The size after the copy: a filter listed in a copy was allocated
	// before the copy was written, so it lies within this size.
	if f.file != nil {
		if size, err = f.file.Refresh(); err != nil {
			return nil, 0, err
		}
	}
	p, err := header.Pick(b, size)
	if err != nil {
		return nil, 0, err
	}
	m, which := p.Meta, p.Which
	listed := len(m.Filters)
	if want > 0 {
		// want counts every filter ever appended; the directory lists the
		// ones from m.Retired on.
		n := int64(want) - int64(m.Retired)
		if n < 1 || n > int64(listed) {
			return nil, listed, &header.CorruptionError{Offset: header.PublishedOffset, Filter: -1, Field: "published",
				Reason: fmt.Sprintf("%d filters published, the directory lists %d after %d retired", want, listed, m.Retired), Err: header.ErrCorrupt}
		}
		m.Filters = m.Filters[:n]
	}
	f.metaWhich, f.generation = which, m.Generation
	return m, listed, nil
}

func (f *Filter) mapHot() error {
	w, err := f.r.Words(header.HotOffset, (header.DataOffset-header.HotOffset)/8)
	if err != nil {
		return err
	}
	f.hot = w
	h := header.HotAt(w)
	f.words = seqnum.Words{State: &h.State, Disk: &h.DiskSeq}
	f.published, f.retired, f.replaced = &h.Published, &h.Retired, &h.Replaced
	return nil
}

// initFilterLine makes filter line i a new filter's: word by word, each an
// atomic store (other handles may read the line).
func (f *Filter) initFilterLine(i int) {
	l := header.LineAt(f.hot, i)
	atomic.StoreUint64(&l.Items, 0)
	atomic.StoreUint64(&l.Pending, 0)
	atomic.StoreUint64(&l.Mark, 0)
	atomic.StoreUint64(&l.MinID, ^uint64(0))
	atomic.StoreUint64(&l.MaxID, 0)
	atomic.StoreUint64(&l.Index, header.IndexNone)
	atomic.StoreUint64(&l.Writers, 0)
}

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

// writeMeta writes m to both copies, the older first, syncing each before the
// other is touched, so one copy is always whole.
func (f *Filter) writeMeta(m *header.Meta) error {
	for range 2 {
		target := 1 - f.metaWhich
		if f.generation == 0 {
			target = 0
		}
		m.Generation = f.generation + 1
		off := int64(header.MetaAOffset)
		if target == 1 {
			off = header.MetaBOffset
		}
		b, err := f.r.Bytes(off, header.MetaSize)
		if err != nil {
			return err
		}
		header.Encode(b, m)
		if err := f.sync(off, header.MetaSize); err != nil {
			return err
		}
		f.metaWhich, f.generation = target, m.Generation
	}
	return nil
}

func (f *Filter) sync(off, n int64) error {
	if err := f.r.Sync(off, n); err != nil {
		f.syncFailed.Store(true)
		return err
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
// the file that replaced its own (replace.go). It detaches the mapping as
// I15 and I16 require.
func (f *Filter) shutdown() {
	f.closed.Store(true)
	for i := range f.guards {
		for f.guards[i].n.Load() != 0 {
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

// startOp begins a modification so that Close waits for it, and fails
// once the Filter is closed: a shared handle registers a guard (enter),
// which it returns. endOp ends it.
func (sharedWriter) startOp(f *Filter, h uint64) (*guard, error) { return f.enter(h) }

func (sharedWriter) endOp(_ *Filter, g *guard) { g.n.Add(-1) }

// enter registers an operation so that Close waits for it; it fails once
// the Filter is closed.
func (f *Filter) enter(h uint64) (*guard, error) {
	g := &f.guards[h&15]
	g.n.Add(1)
	if f.closed.Load() {
		g.n.Add(-1)
		return nil, ErrClosed
	}
	return g, nil
}
