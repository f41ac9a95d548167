// Floor 6 (making a handle) of package scaling: the region hook the module's
// tests open stores through.

package scaling

import (
	"github.com/dablooms/dablooms/internal/regionhook"
	"github.com/dablooms/dablooms/mmapfile"
)

// The module's tests reach createRegion and openRegion through
// internal/regionhook; they are not part of the API.
func init() {
	regionhook.Create = func(r mmapfile.Region, o any) (any, error) {
		f, err := createRegion(r, o.(*Options))
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	regionhook.Open = func(r mmapfile.Region, o any) (any, error) {
		f, err := openRegion(r, o.(*OpenOptions))
		if err != nil {
			return nil, err
		}
		return f, nil
	}
}
