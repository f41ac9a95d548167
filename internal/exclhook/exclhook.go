// Package exclhook lets package scaling make a counting4.Filter's updates
// stores for its exclusive writer. It is not part of the API: counting4
// sets SetExclusive when it is linked in, taking the filter as any so that
// this package needs no import of counting4.
package exclhook

// SetExclusive tells a *counting4.Filter whether its caller is, for now,
// the only writer of its words (see counting4's setExclusive).
var SetExclusive func(f any, on bool)
