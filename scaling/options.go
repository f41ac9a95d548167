// Floor 0 (words) of package scaling: Options and OpenOptions, and their
// defaults.

package scaling

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
)

// Defaults for the zero fields of Options.
const (
	DefaultCapacity        = 100_000
	DefaultErrorRate       = 0.01
	DefaultGrowthFactor    = 2
	DefaultTighteningRatio = 0.8
	DefaultLockTimeout     = 10 * time.Second
)

// Options configure Create and NewMemory. The zero value means the defaults;
// a nil *Options too.
type Options struct {
	// Capacity is the number of items the first filter holds (default 100,000).
	Capacity uint64
	// ErrorRate bounds the false-positive rate of the whole chain (default 0.01).
	ErrorRate float64
	// GrowthFactor multiplies the capacity of each new filter (default 2; 1 = no growth).
	GrowthFactor float64
	// TighteningRatio multiplies the error target of each new filter (default 0.8).
	TighteningRatio float64
	// Seed is the hash seed; 0 picks a random one.
	Seed uint64
	// Layout of the counters: counting4.Blocked1024 (default: a key's counters
	// in one 128-byte block), counting4.Blocked512 (one 64-byte cache line:
	// faster lookups, more bytes; docs/PERFORMANCE.md has the figures) or
	// counting4.Classic (spread over the filter: smallest, k cache misses).
	Layout counting4.Layout
	// Overwrite lets Create replace an existing file. The new file is made
	// aside and renamed over the old one once complete. A file of format
	// 1.3 or later is replaced while handles have it open: Create first
	// holds its writers (Freeze), and every handle, in any process, moves
	// to the new file at its next call (the old file's keys are gone with
	// it). A file older than 1.3 is refused (errors.Is(err, ErrBusy))
	// while any handle, read-only ones included, has it open.
	Overwrite bool
	// Exclusive makes the new Filter its file's only writer until Close
	// (see OpenOptions.Exclusive). The file is at the path, open to other
	// handles, before it is held: if the hold fails (another file put at
	// the path first: ErrBusy), Create returns the error and the file
	// stays. In memory it makes every modification of the Filter one at a
	// time, with the same ordered stores.
	Exclusive bool
	// Reserve is the address space reserved for growth (0: the default,
	// mmapfile.DefaultReserve: 64 GiB on 64-bit platforms, 256 MiB on
	// 32-bit ones). A file that grows past it is mapped again, larger. On
	// 32-bit platforms a larger Reserve is reduced to 256 MiB, and a
	// file of 2 GiB or more cannot be opened (mmapfile.ErrTooLarge).
	Reserve int64
	// AllowNetworkFS allows a file on NFS, CIFS or FUSE, where several hosts
	// would not see each other's updates. Use only if one host opens it.
	AllowNetworkFS bool
	// LockTimeout bounds every wait for a cross-process lock (default 10 s).
	LockTimeout time.Duration
	// HugePages maps the file of the new Filter with transparent huge
	// pages (mmapfile.Options.HugePages), for a bulk load into a store
	// that fits well under the kernel's dirty limits
	// (vm.dirty_background_ratio of the memory, 10 % by default): at 1e8
	// keys (741 MB) it loads a third faster. Never for a larger store,
	// nor one flushed after each few changes: a change dirties 2 MiB, and
	// random changes over a file past the dirty limits crawl (215 µs per
	// key at 1e9 keys; docs/PERFORMANCE.md, "A billion keys"). Other
	// handles and processes map the file as they do; the file is the
	// same.
	HugePages bool
	// Populate pre-faults the new Filter's file, writable, before Create
	// returns (mmapfile.Options.Populate): a bulk load then takes no page
	// fault at each page's first touch, but Create takes as long as
	// dirtying the file's pages, which for a file larger than the kernel's
	// dirty limits is as long as writing it out (24 s at 1e9 keys, 7.4
	// GB). Filters a growth adds are not populated (a growth holds the
	// growth lock, which other writers wait for).
	Populate bool

	knobs *testknobs.Knobs // the module's tests (internal/testknobs)
}

// OpenOptions configure Open. The zero value means the defaults.
type OpenOptions struct {
	// ReadOnly opens for Contains and Stats only; no writer slot is taken.
	ReadOnly bool
	// AllowUnclean opens a file whose condition is Interrupted or Dirty
	// instead of returning a *StateError. The caller then decides (see recover).
	AllowUnclean bool
	// Reserve is the address space reserved for growth: see Options.Reserve.
	Reserve        int64
	AllowNetworkFS bool
	LockTimeout    time.Duration
	// Exclusive makes the handle the file's only writer until Close, for
	// bulk loads and single-writer applications: its Add, Remove and
	// AddBatch take less time than a shared handle's (the figures are in
	// docs/PERFORMANCE.md, "Exclusive writer").
	//
	// Open waits, up to LockTimeout, for the growth and flush locks (a
	// growth, a flush, a rewrite or another exclusive handle holds them)
	// and then for the other writers' operations in flight; ErrBusy if
	// they outlast it. From then on every other writer, in any process,
	// waits for Close, up to its own LockTimeout (then ErrLockTimeout):
	// its Add, Remove, batches, Flush and RetireBefore alike; so does a
	// rewrite (recover.Compact, Repair: ErrBusy after their wait). Lookups
	// everywhere go on, and see every change as it is made. All methods
	// of the handle stay safe for concurrent use; its modifications run
	// one at a time.
	//
	// It needs a read-write handle (else an *OptionError) on a file of
	// version 1.3 or later (else ErrNotLive; Compact rewrites a file so).
	// If the process dies, the next writer that takes the growth lock lets
	// the others go on, and the file is repaired as after any writer's
	// death. After an OS crash the file may still say it is held (the
	// word is cleared at Close, not synced): the next writer clears it.
	Exclusive bool

	knobs *testknobs.Knobs // the module's tests (internal/testknobs)
}

func (o *Options) withDefaults() (Options, error) {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Capacity == 0 {
		v.Capacity = DefaultCapacity
	}
	if v.ErrorRate == 0 {
		v.ErrorRate = DefaultErrorRate
	}
	if v.GrowthFactor == 0 {
		v.GrowthFactor = DefaultGrowthFactor
	}
	if v.TighteningRatio == 0 {
		v.TighteningRatio = DefaultTighteningRatio
	}
	if v.Layout == 0 {
		v.Layout = counting4.Blocked1024
	}
	if v.LockTimeout == 0 {
		v.LockTimeout = DefaultLockTimeout
	}
	bad := func(field string, val any, why string) (Options, error) {
		return v, &OptionError{Field: field, Value: val, Reason: why}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !finite(v.ErrorRate) || v.ErrorRate <= 0 || v.ErrorRate >= 1:
		return bad("ErrorRate", v.ErrorRate, "must be a finite number with 0 < ErrorRate < 1")
	case !finite(v.GrowthFactor) || v.GrowthFactor < 1 || v.GrowthFactor > 1024:
		return bad("GrowthFactor", v.GrowthFactor, "must be a finite number with 1 ≤ GrowthFactor ≤ 1024")
	case !finite(v.TighteningRatio) || v.TighteningRatio <= 0 || v.TighteningRatio >= 1:
		return bad("TighteningRatio", v.TighteningRatio, "must be a finite number with 0 < TighteningRatio < 1")
	case v.Capacity > header.MaxFileSize:
		return bad("Capacity", v.Capacity, "larger than any file can hold")
	case v.Layout != counting4.Blocked512 && v.Layout != counting4.Blocked1024 && v.Layout != counting4.Classic:
		return bad("Layout", v.Layout, "must be counting4.Blocked512, counting4.Blocked1024 or counting4.Classic")
	case v.Reserve < 0:
		return bad("Reserve", v.Reserve, "must not be negative")
	case v.LockTimeout < 0:
		return bad("LockTimeout", v.LockTimeout, "must not be negative")
	}
	return v, nil
}

// chainLimit returns how many filters the schedule of p can make: the
// chain ends at the first filter whose size or error target leaves what a
// file can hold (a small tightening ratio drives the targets towards zero),
// or at header.MaxFilters.
func chainLimit(p *header.Params) int {
	off := int64(header.DataOffset)
	for i := range header.MaxFilters {
		d, err := describe(p, i, off, 0, i > 0, true)
		if err != nil {
			return i
		}
		off += d.Length
	}
	return header.MaxFilters
}

// fileOptions are the options of the file Create makes.
func (o *Options) fileOptions() *mmapfile.Options {
	return withFailpoints(&mmapfile.Options{
		Overwrite: o.Overwrite, Reserve: o.Reserve, AllowNetworkFS: o.AllowNetworkFS,
		OpenLock: header.OpenLockOffset, HugePages: o.HugePages, Populate: o.Populate,
	}, o.knobs)
}

// filterTarget returns the false-positive target of filter i: the targets
// ErrorRate·(1-r)·r^i sum to ErrorRate over an unbounded chain.
func filterTarget(p *header.Params, i int) float64 {
	return p.ErrorRate * (1 - p.TighteningRatio) * math.Pow(p.TighteningRatio, float64(i))
}

// filterCapacity returns the capacity of filter i.
func filterCapacity(p *header.Params, i int) uint64 {
	return uint64(math.Round(float64(p.Capacity) * math.Pow(p.GrowthFactor, float64(i))))
}

// describe sizes filter i of a chain whose previous filter ends at off,
// with check pages if sums (a file with header.FlagPageSums).
func describe(p *header.Params, i int, off int64, firstID uint64, follows, sums bool) (header.FilterDesc, error) {
	if i >= header.MaxFilters {
		return header.FilterDesc{}, fmt.Errorf("%w: %d filters, the most a file holds", ErrFull, header.MaxFilters)
	}
	capy := filterCapacity(p, i)
	target := filterTarget(p, i)
	if capy == 0 || capy > header.MaxFileSize || !(target > 0) {
		return header.FilterDesc{}, &OptionError{Field: "Capacity", Value: p.Capacity, Reason: "filter " + strconv.Itoa(i) + " would not fit in a file"}
	}
	lay := counting4.Layout(p.LayoutID)
	// Sized for the slack too: a sealed filter takes up to that many more
	// items for ids inside its range (see route).
	counters, k, err := lay.Size(header.ItemLimit(capy), target)
	if err != nil {
		// Name the option at fault: the error target if the capacity
		// alone could be built, else the capacity.
		oe := &OptionError{Field: "Capacity", Value: p.Capacity}
		if _, _, e := lay.Size(header.ItemLimit(capy), 0.01); e == nil {
			oe.Field, oe.Value = "ErrorRate", p.ErrorRate
		}
		oe.Reason = fmt.Sprintf("filter %d (capacity %d, false-positive target %.3g) cannot be built: %v", i, capy, target, err)
		return header.FilterDesc{}, oe
	}
	length := filterLength(counters)
	var extra int64
	if p.HashID == header.HashXXH64Seeded {
		// The writers' item counts; every filter that follows another can
		// take late Adds (see route).
		extra = header.CountsBytes
		if follows {
			extra += header.IndexBytes(capy)
		}
		length += extra
	}
	d := header.FilterDesc{
		FirstID: firstID, Capacity: capy, Counters: counters, Offset: off, Length: length, Extra: extra, Slot: i,
		ErrorRate: target, K: k, HashID: uint8(p.HashID), LayoutID: uint8(p.LayoutID),
	}
	if sums {
		header.AddSums(&d)
	}
	if off+d.Length > header.MaxFileSize {
		return header.FilterDesc{}, &OptionError{Field: "Capacity", Value: p.Capacity, Reason: "the filter would not fit in a file (over 1 TiB)"}
	}
	return d, nil
}

// filterLength is the bytes a filter of n 4-bit counters takes in the file:
// its counter words, rounded up to whole pages.
func filterLength(n uint64) int64 {
	return int64((n+15)/16*8+header.PageSize-1) / header.PageSize * header.PageSize
}

// The module's tests attach knobs to Options and OpenOptions through
// internal/testknobs; a Filter copies them once, when it is made, into
// its own fields (tk; chain.legacy), and its steps read those: no test
// switch is a package variable. They are not part of the API.
func init() {
	testknobs.Register(func(opts any, k *testknobs.Knobs) bool {
		switch o := opts.(type) {
		case *Options:
			o.knobs = k
		case *OpenOptions:
			o.knobs = k
		default:
			return false
		}
		return true
	})
}
