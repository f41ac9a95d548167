package scaling

// Helpers shared by the scaling tests (defects, accuracy, persistence,
// concurrency, fuzz, benchmarks): keys, filters in a file or in memory, file
// identity and counter snapshots.

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/dablooms/dablooms/mmapfile"
)

// makeKey writes prefix and i zero-padded to 12 digits into dst[:0]: the
// `key-%012d` family without fmt (so key generation stays cheap in the big
// accuracy runs and never allocates once dst is large enough).
func makeKey(dst []byte, prefix string, i int) []byte { return appendKey(dst[:0], prefix, i) }

// appendKey appends the key makeKey makes to dst.
func appendKey(dst []byte, prefix string, i int) []byte {
	dst = append(dst, prefix...)
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(i), 10)
	for n := len(s); n < 12; n++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// keyString is makeKey returning a string.
func keyString(prefix string, i int) string { return string(makeKey(nil, prefix, i)) }

// storeMode says whether a filter lives in a file or in memory.
type storeMode string

const (
	inFile   storeMode = "file"
	inMemory storeMode = "memory"
)

// newStore creates a filter in the given mode; a file filter lives in a fresh
// temporary directory and is closed at the end of the test. path is "" in
// memory mode.
func newStore(t testing.TB, mode storeMode, o *Options) (f *Filter, path string) {
	t.Helper()
	var err error
	if mode == inFile {
		requireFiles(t)
		path = filepath.Join(t.TempDir(), "store.dbl")
		f, err = Create(path, o)
	} else {
		f, err = NewMemory(o)
	}
	if err != nil {
		t.Fatalf("%s filter %+v: %v", mode, o, err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

// fileID is a file's content hash and size.
type fileID struct {
	sum  [32]byte
	size int64
}

func identify(t testing.TB, path string) fileID {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileID{sha256.Sum256(b), int64(len(b))}
}

// counterWords copies the counter words of every filter of the chain.
func counterWords(f *Filter) [][]uint64 {
	var s [][]uint64
	for _, m := range f.chain.Load().f {
		s = append(s, slices.Clone(m.cf.Words()))
	}
	return s
}

// sameWords reports whether two snapshots are equal word for word.
func sameWords(a, b [][]uint64) bool {
	return slices.EqualFunc(a, b, func(x, y []uint64) bool { return slices.Equal(x, y) })
}

// nonZeroWords counts the non-zero counter words of every filter.
func nonZeroWords(f *Filter) (n int) {
	for _, m := range f.chain.Load().f {
		for _, w := range m.cf.Words() {
			if w != 0 {
				n++
			}
		}
	}
	return n
}

// smallFile writes a small, valid, flushed file (fixed seed, two filters)
// and returns its bytes. It is the seed of the fuzz targets and of the
// corrupt-file tests.
func smallFile(t testing.TB) (path string, b []byte) {
	requireFiles(t)
	t.Helper()
	path = filepath.Join(t.TempDir(), "small.dbl")
	f, err := Create(path, &Options{Capacity: 200, ErrorRate: 0.05, Seed: 0x5eed})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 { // 200 fill filter 0, 100 go to filter 1
		if err := f.AddString(keyString("key-", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// openErrorOK reports whether err is an error Open may return for hostile
// bytes: one wrapping a header sentinel, an unclean-state or no-slot refusal
// (the hot words are input too), or a plain I/O error.
func openErrorOK(err error) bool {
	for _, s := range []error{ErrNotDablooms, ErrVersion, ErrChecksum, ErrCorrupt, ErrUnclean, ErrNoSlot, mmapfile.ErrFault} {
		if errors.Is(err, s) {
			return true
		}
	}
	var pe *fs.PathError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &errno)
}

// raceEnabled reports whether the test binary was built with -race (which makes
// the big single-goroutine loops about ten times slower).
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// TestT2Key pins the key format the tests and benchmarks share.
func TestT2Key(t *testing.T) {
	for _, c := range []struct {
		i    int
		want string
	}{{0, "key-000000000000"}, {42, "key-000000000042"}, {987654321, "key-000987654321"}} {
		if got := keyString("key-", c.i); got != c.want {
			t.Errorf("makeKey(%d) = %q, want %q", c.i, got, c.want)
		}
	}
}
