package scaling_test

// Installs the end-of-round check of TestStress (stress_test.go): package
// recover imports scaling, so only the external test package may call it.

import (
	"fmt"

	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

func init() {
	scaling.SetStressVerify(func(path string) (string, [][2]uint64, error) {
		r, err := recover.Verify(path)
		if err != nil {
			return "", nil, err
		}
		var filters [][2]uint64
		for _, f := range r.Filters {
			filters = append(filters, [2]uint64{f.Items, f.Capacity})
		}
		if err := r.Err(); err != nil {
			return r.State.String(), filters, fmt.Errorf("%s: %w (findings: %v)", r.State, err, r.Findings)
		}
		return r.State.String(), filters, nil
	})
}
