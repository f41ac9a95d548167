// Package regionhook lets the module's own tests open a store in a custom
// mmapfile.Region (recover's crash model keeps a file image in memory). It
// is not part of the API: package scaling sets the functions when it is
// linked in, and they take and return scaling's types as any so that this
// package needs no import of scaling.
package regionhook

import "github.com/dablooms/dablooms/mmapfile"

// Create initialises a new store in an empty region (opts is a
// *scaling.Options, the result a *scaling.Filter); Open opens one (opts is
// a *scaling.OpenOptions). Both are nil until package scaling is linked.
var (
	Create func(r mmapfile.Region, opts any) (any, error)
	Open   func(r mmapfile.Region, opts any) (any, error)
)
