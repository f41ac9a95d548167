package scaling_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// A process killed between the two metadata copies' writes of a growth
// (writeMeta syncs the first before it touches the second) leaves the
// newer directory in one copy and the older in the other; killed while it
// encodes a copy, it leaves that copy torn. Readers go by the newer copy,
// but before the fix a file flushed clean afterwards kept the older copy,
// and Verify called it damaged (exit 3 from dabloomsctl verify) for as
// long as no other growth rewrote the copies. A read-write Open and a
// Flush now finish the write (finishMetaWrite).
func TestMetaWriteCutShort(t *testing.T) {
	// cutShort grows a file from one filter to two, then puts the bytes of
	// the copy written last back as broken says: the older directory, or
	// garbage.
	cutShort := func(t *testing.T, broken string) (path string, keys int) {
		t.Helper()
		path = filepath.Join(t.TempDir(), "f.dbl")
		f, err := scaling.Create(path, &scaling.Options{Capacity: 1000, ErrorRate: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		keys = 1500
		for i := range 500 {
			if err := f.Add(mcKey(i), uint64(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := 500; i < keys; i++ {
			if err := f.Add(mcKey(i), uint64(i)); err != nil {
				t.Fatal(err)
			}
		}
		if st := f.Stats(); len(st.Filters) < 2 {
			t.Fatalf("%d filters: the adds did not grow the chain", len(st.Filters))
		}
		f.Close() // not flushed: as if killed
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a, errA := header.Decode(b[:header.MetaSize], header.MetaAOffset, -1)
		c, errB := header.Decode(b[header.MetaSize:2*header.MetaSize], header.MetaBOffset, -1)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		last := int64(header.MetaAOffset) // the copy written last: the newer
		if c.Generation > a.Generation {
			last = header.MetaBOffset
		}
		put := before[last : last+header.MetaSize]
		if broken == "torn" {
			put = make([]byte, header.MetaSize)
			copy(put, b[last:last+header.MetaSize/2])
		}
		fh, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteAt(put, last); err != nil {
			t.Fatal(err)
		}
		return path, keys
	}
	verify := func(t *testing.T, path string, keys int, want recover.State) {
		t.Helper()
		r, err := recover.Verify(path)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != want {
			t.Fatalf("verify: %v, want %v; findings %v", r.State, want, r.Findings)
		}
		g, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		for i := range keys {
			if !g.Contains(mcKey(i)) {
				t.Fatalf("key %d lost", i)
			}
		}
	}
	for _, broken := range []string{"older", "torn"} {
		t.Run(broken+"/as left", func(t *testing.T) {
			// The finding stands until something finishes the write
			// (what the subtests below check is that something does).
			path, keys := cutShort(t, broken)
			verify(t, path, keys, recover.Damaged)
		})
		t.Run(broken+"/open, add, flush", func(t *testing.T) {
			path, keys := cutShort(t, broken)
			f, err := scaling.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Add([]byte("x"), 5000); err != nil {
				t.Fatal(err)
			}
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			verify(t, path, keys, recover.Clean)
		})
		t.Run(broken+"/flush of a handle open before", func(t *testing.T) {
			// A handle that was open when the writer died does not open
			// the file again: its Flush must finish the write.
			path := filepath.Join(t.TempDir(), "held")
			var f *scaling.Filter
			opened := func(p string) {
				var err error
				if f, err = scaling.Open(p, nil); err != nil {
					t.Fatal(err)
				}
			}
			p, keys := cutShort(t, broken)
			if err := os.Rename(p, path); err != nil {
				t.Fatal(err)
			}
			// Open first, then break the copies under the open handle
			// (the same bytes as a kill would leave).
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			heal(t, path)
			opened(path)
			defer f.Close()
			fh, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fh.WriteAt(good[:2*header.MetaSize], 0); err != nil {
				t.Fatal(err)
			}
			fh.Close()
			for i := range 20 {
				if err := f.Add(fmt.Appendf(nil, "y%d", i), 5000); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			verify(t, path, keys, recover.Clean)
		})
	}
}

// heal opens path read-write and flushes it: the copies are whole and
// alike afterwards (the subtest above that checks it).
func heal(t *testing.T, path string) {
	t.Helper()
	f, err := scaling.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func mcKey(i int) []byte { return fmt.Appendf(nil, "m%d", i) }
