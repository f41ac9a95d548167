// Package testknobs lets the module's own tests inject failures into a
// Filter. It is not part of the API:
// package scaling sets Set when it is linked in, and a Filter reads its
// knobs once, when Create, NewMemory or Open makes it, so that tests
// running in parallel each switch only their own handles.
package testknobs

import "github.com/dablooms/dablooms/mmapfile"

// Knobs are a Filter's failure injection. The zero
// value switches nothing; a Filter without knobs behaves as one with the
// zero value.
type Knobs struct {
	// Failpoints inject sync, allocation and mapping failures into the
	// Filter's file (and the files it moves to after a replacement).
	Failpoints *mmapfile.Failpoints
}

// Set attaches k to opts, a *scaling.Options or *scaling.OpenOptions: the
// Filter made with them uses k. Nil until package scaling is linked.
var Set func(opts any, k *Knobs)
