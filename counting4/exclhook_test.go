package counting4

import (
	"testing"

	"github.com/dablooms/dablooms/internal/exclhook"
)

// scaling's exclusive writer reaches setExclusive through exclhook only.
func TestExclHookSetsExclusive(t *testing.T) {
	f, err := New(make([]uint64, 64), Classic, 1024, 4)
	if err != nil {
		t.Fatal(err)
	}
	exclhook.SetExclusive(f, true)
	if !f.excl {
		t.Fatal("exclhook.SetExclusive(f, true) left the filter shared")
	}
	exclhook.SetExclusive(f, false)
	if f.excl {
		t.Fatal("exclhook.SetExclusive(f, false) left the filter exclusive")
	}
}
