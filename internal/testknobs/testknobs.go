// Package testknobs lets the module's own tests inject failures into a
// Filter and switch on its negative controls. It is not part of the API:
// package scaling sets Set when it is linked in, and a Filter reads its
// knobs once, when Create, NewMemory or Open makes it, so that tests
// running in parallel each switch only their own handles.
package testknobs

import "github.com/dablooms/dablooms/mmapfile"

// Knobs are a Filter's failure injection and negative controls. The zero
// value switches nothing; a Filter without knobs behaves as one with the
// zero value.
type Knobs struct {
	// Failpoints inject sync, allocation and mapping failures into the
	// Filter's file (and the files it moves to after a replacement).
	Failpoints *mmapfile.Failpoints

	// Negative controls: each turns off one mechanism, so that the test
	// that pins it can show it fails without it (docs/PROTOCOLS.md).

	// LegacyRouting routes Adds as version 1.0 did, without late Adds.
	LegacyRouting bool
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

	// Hooks: each, if set, runs at one step of the Filter.

	// CreateHook runs in Create between the new file's rename to its path
	// and the exclusive hold.
	CreateHook func(path string)
	// SlotReadHook runs after the Filter first finds records of a slot it
	// does not own in flight (Stats, a rewrite's wait).
	SlotReadHook func(slot int)
	// RouteHook runs after an Add is routed to the filter with the given
	// chain number, before its record is claimed.
	RouteHook func(seq uint64)
}

// Set attaches k to opts, a *scaling.Options or *scaling.OpenOptions: the
// Filter made with them uses k. Nil until package scaling is linked.
var Set func(opts any, k *Knobs)
