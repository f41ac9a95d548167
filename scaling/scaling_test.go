package scaling

// Shared helpers of the scaling tests written by "t2" (defects, accuracy,
// persistence, concurrency, fuzz, benchmarks). Every helper is prefixed t2 so
// it cannot clash with helpers of other test files of the package.

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

// t2Key writes prefix and i zero-padded to 12 digits into dst[:0]: the
// `key-%012d` family without fmt (so key generation stays cheap in the big
// accuracy runs and never allocates once dst is large enough).
func t2Key(dst []byte, prefix string, i int) []byte { return t2AppendKey(dst[:0], prefix, i) }

// t2AppendKey appends the key t2Key makes to dst.
func t2AppendKey(dst []byte, prefix string, i int) []byte {
	dst = append(dst, prefix...)
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(i), 10)
	for n := len(s); n < 12; n++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// t2KeyS is t2Key returning a string.
func t2KeyS(prefix string, i int) string { return string(t2Key(nil, prefix, i)) }

// t2Mode says whether a filter lives in a file or in memory.
type t2Mode string

const (
	t2File t2Mode = "file"
	t2Mem  t2Mode = "memory"
)

// t2New creates a filter in the given mode; a file filter lives in a fresh
// temporary directory and is closed at the end of the test. path is "" in
// memory mode.
func t2New(t testing.TB, mode t2Mode, o *Options) (f *Filter, path string) {
	t.Helper()
	var err error
	if mode == t2File {
		path = filepath.Join(t.TempDir(), "t2.dbl")
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

// t2FileID is a file's content hash and size.
type t2FileID struct {
	sum  [32]byte
	size int64
}

func t2Identify(t testing.TB, path string) t2FileID {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return t2FileID{sha256.Sum256(b), int64(len(b))}
}

// t2Snapshot copies the counter words of every filter of the chain.
func t2Snapshot(f *Filter) [][]uint64 {
	var s [][]uint64
	for _, m := range f.chain.Load().f {
		s = append(s, slices.Clone(m.cf.Words()))
	}
	return s
}

// t2SameWords reports whether two snapshots are equal word for word.
func t2SameWords(a, b [][]uint64) bool {
	return slices.EqualFunc(a, b, func(x, y []uint64) bool { return slices.Equal(x, y) })
}

// t2NonZeroWords counts the non-zero counter words of every filter.
func t2NonZeroWords(f *Filter) (n int) {
	for _, m := range f.chain.Load().f {
		for _, w := range m.cf.Words() {
			if w != 0 {
				n++
			}
		}
	}
	return n
}

// t2SmallFile writes a small, valid, flushed file (fixed seed, two filters)
// and returns its bytes. It is the seed of the fuzz targets and of the
// corrupt-file tests.
func t2SmallFile(t testing.TB) (path string, b []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "small.dbl")
	f, err := Create(path, &Options{Capacity: 200, ErrorRate: 0.05, Seed: 0x5eed})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 { // 200 fill filter 0, 100 go to filter 1
		if err := f.AddString(t2KeyS("key-", i), uint64(i)); err != nil {
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

// t2OpenErrorOK reports whether err is an error Open may return for hostile
// bytes: one wrapping a header sentinel, an unclean-state or no-slot refusal
// (the hot words are input too), or a plain I/O error.
func t2OpenErrorOK(err error) bool {
	for _, s := range []error{ErrNotDablooms, ErrVersion, ErrChecksum, ErrCorrupt, ErrUnclean, ErrNoSlot, mmapfile.ErrFault} {
		if errors.Is(err, s) {
			return true
		}
	}
	var pe *fs.PathError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &errno)
}

// t2Race reports whether the test binary was built with -race (which makes
// the big single-goroutine loops about ten times slower).
func t2Race() bool {
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
		if got := t2KeyS("key-", c.i); got != c.want {
			t.Errorf("t2Key(%d) = %q, want %q", c.i, got, c.want)
		}
	}
}
