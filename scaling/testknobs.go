package scaling

import (
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
)

// The module's tests attach knobs to Options and OpenOptions through
// internal/testknobs; a Filter reads them once, when it is made. They are
// not part of the API.
func init() {
	testknobs.Set = func(opts any, k *testknobs.Knobs) {
		switch o := opts.(type) {
		case *Options:
			o.knobs = k
		case *OpenOptions:
			o.knobs = k
		default:
			panic("testknobs.Set: not a *scaling.Options or *scaling.OpenOptions")
		}
	}
}

// failpoints returns the failpoints of k, if any.
func failpoints(k *testknobs.Knobs) *mmapfile.Failpoints {
	if k == nil {
		return nil
	}
	return k.Failpoints
}
