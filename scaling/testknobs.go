// Floor 0 (words) of package scaling: how the module's tests hand a Filter
// its knobs (internal/testknobs).

package scaling

import (
	"github.com/dablooms/dablooms/internal/failpoint"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
)

// withFailpoints gives o the failpoints of k, if any, and returns it.
func withFailpoints(o *mmapfile.Options, k *testknobs.Knobs) *mmapfile.Options {
	if k != nil && k.Failpoints != nil {
		failpoint.Attach(o, k.Failpoints)
	}
	return o
}

// knobsOf returns a copy of k for a new Filter, nil if k is.
func knobsOf(k *testknobs.Knobs) *testknobs.Knobs {
	if k == nil {
		return nil
	}
	c := *k
	return &c
}

// knob returns k, or the zero Knobs (none) if k is nil (testknobs.Of). Each
// caller reads one off a rare path (or once per handle).
func knob(k *testknobs.Knobs) *testknobs.Knobs { return testknobs.Of(k) }
