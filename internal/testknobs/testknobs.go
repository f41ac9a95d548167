// Package testknobs lets the module's own tests (and dabloomsctl's hidden
// testing flags) inject failures into a Filter, pretend another boot, and
// switch on its negative controls. It is not part of the API: packages
// scaling and recover register their option types when they are linked
// in; a Filter reads its knobs once, when Create, NewMemory or Open makes
// it, and a recover function once per call, so that tests running in
// parallel each switch only their own handles and calls.
package testknobs

import (
	"fmt"

	"github.com/dablooms/dablooms/internal/failpoint"
)

// Knobs are a Filter's failure injection and negative controls. The zero
// value switches nothing; a Filter without knobs behaves as one with the
// zero value.
type Knobs struct {
	// Failpoints inject sync, allocation and mapping failures into the
	// Filter's file (and the files it moves to after a replacement).
	Failpoints *failpoint.Points

	// BootID, if not empty, stands for the machine's boot identity: the
	// one a Filter records with its dirty mark, and the one recover
	// compares a dirty file's with (dabloomsctl --boot-id). A test
	// pretends a reboot by opening a file with another BootID.
	BootID string

	// Negative controls: each turns off one mechanism, so that the test
	// that pins it can show it fails without it (docs/PROTOCOLS.md).

	// LegacyRouting routes Adds as version 1.0 did, without late Adds.
	LegacyRouting bool
	// LateRepeatsSeal makes every late Add of a pair take an index entry,
	// however many its copies (none saturated): a pair replayed
	// header.IndexMaxProbe times fills its probe window and seals the
	// newest filter.
	LateRepeatsSeal bool
	// SkipGoneCheck makes the gate (gone) never stop an operation.
	SkipGoneCheck bool
	// SkipReplaceCheck makes the Filter ignore the replaced word.
	SkipReplaceCheck bool
	// SkipDetachedMark makes Close detach the region without telling the
	// lookups in flight.
	SkipDetachedMark bool
	// UnmapAtClose makes Close unmap at once, as if lookups were not
	// protected.
	UnmapAtClose bool
	// GrowSkipsReclaim makes grow keep the handle's reservations.
	GrowSkipsReclaim bool
	// QuotaSkipsCheck makes a reservation skip the capacity check.
	QuotaSkipsCheck bool
	// ExclusiveSkipFreeze makes an exclusive hold take no lock and leave
	// the other writers running.
	ExclusiveSkipFreeze bool
	// PageSumsReadFirst makes Flush read a changed page for its checksum
	// before it takes the page's mark, not after: a change that lands in
	// between is then left unmarked under a stale checksum.
	PageSumsReadFirst bool
	// FlushTakeUnrecorded makes Flush take the page checksums as it did
	// before the hot taking word: without naming the map page it takes,
	// and without marking again the pages a killed flush left named. A
	// flush killed inside the take then leaves pages unmarked under
	// stale checksums, which the next flush marks clean.
	FlushTakeUnrecorded bool
	// FlushNoTakeOver makes Flush leave a Flushing phase it finds while
	// it holds the flush lock (a killed flush's) alone, as before: it
	// syncs and claims nothing.
	FlushNoTakeOver bool
	// FlushSkipsRetirement makes Flush mark the file clean over a
	// retirement cut short, as a library before issue 38 did.
	FlushSkipsRetirement bool

	// Hooks: each, if set, runs at one step of the Filter.

	// CreateHook runs in Create between the new file's rename to its path
	// and the exclusive hold.
	CreateHook func(path string)
	// SlotReadHook runs after the Filter first finds records of a slot it
	// does not own in flight (Stats, a rewrite's wait).
	SlotReadHook func(slot int)
	// FlushStep runs at each step of a Flush that may claim clean: "begun"
	// (it moved dirty to flushing, or took over a killed flush's
	// flushing), in the take of the page checksums "recorded" (the taking
	// word names a map page), "swapped" (a map word's marks taken) and
	// "stored" (a page's checksum stored), then "taken", "synced" and
	// "ended" (the file marked clean). A test stops the flush there as a
	// kill would with runtime.Goexit (the locks are let go as a dead
	// process's are).
	FlushStep func(step string)
	// RouteHook runs once an Add (single, batched or swept) is routed to
	// the filter with the given chain number, before its record is
	// claimed. A handle with one has its writer wrapped when it is made
	// (scaling/testknobs.go): no operation tests for it.
	RouteHook func(seq uint64)

	// RecoverStep runs at each named step of a recover call (Repair and
	// Rebuild: "copied", "patched", "backup", "renamed"; Backup: "backup
	// opened", "backup copied", "backup holding", "backup held copy"); an
	// error stops the call there as a crash would, leaving whatever
	// temporary file exists.
	RecoverStep func(step string) error
	// SyncDir, if set, stands for mmapfile.SyncDir where Backup and
	// Restore make the rename of their copy durable.
	SyncDir func(dir string) error
}

// setters are the registered option types' setters (Register).
var setters []func(opts any, k *Knobs) bool

// Register adds a setter: it attaches k to opts and reports true if opts
// is one of its package's option types (a pointer to it). Packages call it
// from init.
func Register(set func(opts any, k *Knobs) bool) { setters = append(setters, set) }

// Set attaches k to opts, a pointer to the options of a registered package
// (scaling.Options and OpenOptions; recover's RepairOptions,
// VerifyOptions, BackupOptions, RestoreOptions and CompactOptions): the
// Filter or the call made with them uses k. It panics on any other type:
// a mistake in a test, not an input.
func Set(opts any, k *Knobs) {
	for _, set := range setters {
		if set(opts, k) {
			return
		}
	}
	panic(fmt.Sprintf("testknobs.Set: %T is not a registered options type", opts))
}

// none is the Knobs of a handle or call that has none: nothing switched on.
// Never written.
var none Knobs

// Of returns k, or the zero Knobs if k is nil, without copying them: the
// checks that read a knob on a modification's path cost a load and a test.
func Of(k *Knobs) *Knobs {
	if k == nil {
		return &none
	}
	return k
}
