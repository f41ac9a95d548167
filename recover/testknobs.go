package recover

import "github.com/dablooms/dablooms/internal/testknobs"

// The module's tests and dabloomsctl's hidden testing flags attach knobs
// (internal/testknobs: a boot identity, hooks) to recover's options; a
// call reads them once and hands them on to the scaling handles and the
// calls it makes, so that tests running in parallel each switch only
// their own calls. They are not part of the API.
func init() {
	testknobs.Register(func(opts any, k *testknobs.Knobs) bool {
		switch o := opts.(type) {
		case *RepairOptions:
			o.knobs = k
		case *VerifyOptions:
			o.knobs = k
		case *BackupOptions:
			o.knobs = k
		case *RestoreOptions:
			o.knobs = k
		case *CompactOptions:
			o.knobs = k
		default:
			return false
		}
		return true
	})
}

// withKnobs attaches k, if any, to the options o (of scaling or recover)
// and returns o.
func withKnobs[T any](o *T, k *testknobs.Knobs) *T {
	if k != nil {
		testknobs.Set(o, k)
	}
	return o
}

// knob returns k, or the zero Knobs (none) if k is nil (testknobs.Of).
func knob(k *testknobs.Knobs) *testknobs.Knobs { return testknobs.Of(k) }
