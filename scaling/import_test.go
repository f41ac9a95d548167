package scaling

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/legacy"
	"github.com/twmb/murmur3"
)

// origTestdata is the original's files, in the module's testdata (see its README.md).
const origTestdata = "../testdata/dablooms-0.9.1"

// origFile copies a file of the original's testdata to a temp dir; a missing file fails the test.
func origFile(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join(origTestdata, name)
	in, err := os.Open(src)
	if err != nil {
		t.Fatalf("testdata of dablooms 0.9.1 missing: %v", err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), name)
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// origReader is an independent, straightforward reader of the original's
// files, written from its documented format (not from package legacy):
// it answers Contains exactly as the original's algorithm does.
type origReader struct {
	filters [][]byte // counter bytes of each filter
	k, cpf  []uint64
	mem     uint64
	disk    uint64
}

func readOrig(t *testing.T, path string, capacity uint64, e float64, counting bool) *origReader {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &origReader{}
	off := 0
	if !counting {
		r.mem = binary.LittleEndian.Uint64(b[8:])
		r.disk = binary.LittleEndian.Uint64(b[16:])
		off = 24
	}
	for i := 0; off < len(b); i++ {
		p := e * math.Pow(0.5, float64(i+1))
		if counting {
			p = e
		}
		k := uint64(math.Ceil(math.Log(1/p) / math.Log(2)))
		cpf := uint64(math.Ceil(float64(capacity) * math.Abs(math.Log(p)) / (float64(k) * math.Ln2 * math.Ln2)))
		n := int(16 + (k*cpf+1)/2)
		if off+n > len(b) {
			t.Fatalf("%s: filter %d runs past the end", path, i)
		}
		r.filters = append(r.filters, b[off+16:off+n])
		r.k, r.cpf = append(r.k, k), append(r.cpf, cpf)
		off += n
	}
	return r
}

func (r *origReader) contains(key []byte) bool {
	h, _ := murmur3.SeedSum128(0x97c29b3a, 0x97c29b3a, key)
	h1, h2 := uint32(h), uint32(h>>32)
	for i := len(r.filters) - 1; i >= 0; i-- {
		all := true
		for j := uint64(0); j < r.k[i] && all; j++ {
			idx := uint64((h1+uint32(j)*h2)%uint32(r.cpf[i])) + j*r.cpf[i]
			c := r.filters[i][idx/2]
			if idx%2 == 0 {
				c >>= 4
			}
			all = c&15 != 0
		}
		if all {
			return true
		}
	}
	return false
}

func TestImportDablooms(t *testing.T) {
	requireFiles(t)
	cases := []struct {
		file      string
		capacity  uint64
		e         float64
		counting  bool
		added     func(i int) bool // keys key-<i>, i < 3000, present in the original
		state     Condition
		mem, disk uint64
		condition Condition
	}{
		{"scaling_1000_0.05.bin", 1000, 0.05, false, func(i int) bool { return i < 2500 && i%5 != 0 }, Clean, 3001, 3001, Clean},
		{"scaling_dupids.bin", 100, 0.1, false, func(i int) bool { return i < 500 }, Unflushed, 501, 0, Unflushed},
		{"counting_1000_0.05.bin", 1000, 0.05, true, func(i int) bool { return i < 1000 && i%5 != 0 }, Clean, 0, 0, Clean},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			old := origFile(t, tc.file)
			before := identify(t, old)
			orig := readOrig(t, old, tc.capacity, tc.e, tc.counting)
			newPath := filepath.Join(t.TempDir(), "new.dbl")
			imp := ImportDablooms
			if tc.counting {
				imp = ImportDabloomsCounting
			}
			f, rep, err := imp(newPath, old, tc.capacity, tc.e, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if identify(t, old) != before {
				t.Fatal("the original file changed")
			}
			if rep.State != tc.state || f.MemSeqnum() != tc.mem || f.DiskSeqnum() != tc.disk || f.Condition() != tc.condition {
				t.Fatalf("state %v mem %d disk %d condition %v; want %v %d %d %v", rep.State, f.MemSeqnum(), f.DiskSeqnum(), f.Condition(), tc.state, tc.mem, tc.disk, tc.condition)
			}
			check := func(f *Filter, what string) {
				t.Helper()
				mismatch, fn, fp := 0, 0, 0
				for i := 0; i < 3000; i++ {
					key := []byte(fmt.Sprint("key-", i))
					got, want := f.Contains(key), orig.contains(key)
					if got != want {
						mismatch++
					}
					if tc.added(i) && !got {
						fn++
					}
				}
				for i := 0; i < 100_000; i++ {
					key := []byte(fmt.Sprint("other-", i))
					got := f.Contains(key)
					if got != orig.contains(key) {
						mismatch++
					}
					if got {
						fp++
					}
				}
				if mismatch != 0 || fn != 0 {
					t.Fatalf("%s: %d answers differ from the original's, %d false negatives", what, mismatch, fn)
				}
				t.Logf("%s: 103,000 answers identical to the original's; 0 false negatives; %d/100000 false positives", what, fp)
			}
			check(f, "converted")
			f.Close()
			g, err := Open(newPath, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			check(g, "reopened")
			// It behaves as a normal file: removals route by the original's ids,
			// and growth appends filters with the native hash.
			if !tc.counting && tc.added(1) {
				if err := g.Remove([]byte("key-1"), 1); err != nil {
					t.Fatalf("remove key-1 with its original id: %v", err)
				}
			}
			base := uint64(1_000_000)
			for i := 0; i < int(3*tc.capacity); i++ {
				if err := g.Add([]byte(fmt.Sprint("new-", i)), base+uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			st := g.Stats()
			if last := st.Filters[len(st.Filters)-1]; last.Hash != "xxh64" {
				t.Fatalf("new filter uses hash %s", last.Hash)
			}
			for i := 0; i < int(3*tc.capacity); i++ {
				if !g.Contains([]byte(fmt.Sprint("new-", i))) {
					t.Fatalf("new-%d missing after growth", i)
				}
			}
			for i := 2; i < 3000; i++ {
				if tc.added(i) && !g.Contains([]byte(fmt.Sprint("key-", i))) {
					t.Fatalf("original key-%d lost after growth", i)
				}
			}
		})
	}
}

func TestImportDabloomsRefuses(t *testing.T) {
	requireFiles(t)
	src := origFile(t, "scaling_1000_0.05.bin")
	b, _ := os.ReadFile(src)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name     string
		path     string
		capacity uint64
		e        float64
	}{
		{"wrong capacity", src, 2000, 0.05},
		{"wrong error rate", src, 1000, 0.01},
		{"truncated", write("trunc.bin", b[:len(b)-100]), 1000, 0.05},
		{"oversized", write("over.bin", append(bytes.Clone(b), make([]byte, 4096)...)), 1000, 0.05},
		{"empty", write("empty.bin", nil), 1000, 0.05},
		{"header only", write("hdr.bin", b[:24]), 1000, 0.05},
		{"error rate 1", src, 1000, 1},
		{"capacity 0", src, 0, 0.05},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := identify(t, tc.path)
			newPath := filepath.Join(t.TempDir(), "new.dbl")
			f, _, err := ImportDablooms(newPath, tc.path, tc.capacity, tc.e, nil)
			if err == nil {
				f.Close()
				t.Fatal("imported")
			}
			if !errors.Is(err, legacy.ErrSizeMismatch) && !errors.Is(err, legacy.ErrBadParams) {
				t.Fatalf("error %v is neither ErrSizeMismatch nor ErrBadParams", err)
			}
			if identify(t, tc.path) != before {
				t.Fatal("the original file changed")
			}
			if _, err := os.Stat(newPath); !os.IsNotExist(err) {
				t.Fatal("a new file was left behind")
			}
		})
	}
}
