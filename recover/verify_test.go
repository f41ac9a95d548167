package recover

import (
	"errors"
	"os"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// flipByte inverts the byte at off of the file at path.
func flipByte(t testing.TB, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err == nil {
		b[off] ^= 0xff
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestOneBadCopyMagicIsDamage: a file whose metadata copy A has a bad magic
// (copy B is whole) is a damaged dablooms file, and its report's error says
// so, not "not a dablooms file" (issue 11, item 8).
func TestOneBadCopyMagicIsDamage(t *testing.T) {
	for _, off := range []int64{header.MetaAOffset, header.MetaBOffset} { // the magic of copy A, of copy B
		path := newFile(t, 100, counting4.Blocked512, 10)
		flipByte(t, path, off)
		r := verifyT(t, path)
		err := r.Err()
		if r.State != Damaged || errors.Is(err, header.ErrNotDablooms) || errors.Is(err, header.ErrVersion) || !errors.Is(err, header.ErrCorrupt) {
			dumpReport(t, r)
			t.Errorf("byte %d flipped: state %v, Err %v; want damaged, ErrCorrupt", off, r.State, err)
		}
	}
}
