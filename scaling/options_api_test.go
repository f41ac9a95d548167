package scaling_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/scaling"
)

// TestCreateExistingMatchesFsErrExist: Create of a path that holds a file
// fails with ErrExists, which matches fs.ErrExist as os's errors do (a
// missing file already matches fs.ErrNotExist).
func TestCreateExistingMatchesFsErrExist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.dbl")
	f, err := scaling.Create(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = scaling.Create(path, nil)
	if !errors.Is(err, scaling.ErrExists) || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create of an existing file = %v: want ErrExists matching fs.ErrExist", err)
	}
	if _, err := scaling.Open(filepath.Join(t.TempDir(), "none.dbl"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing file = %v: want fs.ErrNotExist", err)
	}
}

// TestOptionErrorNamesTheOptionAtFault: an error target no filter can meet
// is the ErrorRate's fault, not the Capacity's; a capacity no file can hold
// is the Capacity's.
func TestOptionErrorNamesTheOptionAtFault(t *testing.T) {
	for _, tc := range []struct {
		o     scaling.Options
		field string
	}{
		{scaling.Options{Capacity: 1, ErrorRate: 1e-300}, "ErrorRate"},
		{scaling.Options{Capacity: 1000, ErrorRate: 1e-300}, "ErrorRate"},
		{scaling.Options{Capacity: 1e15, ErrorRate: 0.01}, "Capacity"},
	} {
		_, err := scaling.NewMemory(&tc.o)
		var oe *scaling.OptionError
		if !errors.As(err, &oe) || oe.Field != tc.field {
			t.Errorf("%+v: %v; want an OptionError naming %s", tc.o, err, tc.field)
		}
	}
}
