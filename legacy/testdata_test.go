package legacy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// testdataDir is the original's files and vectors, in the module's testdata (see its README.md).
const testdataDir = "../testdata/dablooms-0.9.1"

// testdata returns the path of a file in testdataDir; a missing file fails the test.
func testdata(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(testdataDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testdata of dablooms 0.9.1 missing: %v", err)
	}
	return p
}

// tempCopy copies a testdata file into t.TempDir() and returns the copy's path; tests never open
// the originals.
func tempCopy(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(testdata(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, name, b)
}

func writeTemp(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func sha(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func key(i int) []byte { return []byte("key-" + strconv.Itoa(i)) }

// The files as the testdata README describes them.
var binFiles = []struct{ name, sha256 string }{
	{"scaling_1000_0.05.bin", "2bbf1bed32c4f9353f0ff9edd44170201fb62be361dd2a1b2032c42877241719"},
	{"scaling_dupids.bin", "2495c96a1ad1c70ec4c873c0c8fd73b06c5c2e7966e7fec89d31a3b130f81443"},
	{"counting_1000_0.05.bin", "dc73fe93d571365a51ab388ea4559cc5fff47714b106e3c7b93e28ea09e42041"},
}

func TestTestdataIntact(t *testing.T) {
	for _, f := range binFiles {
		if got := sha(t, tempCopy(t, f.name)); got != f.sha256 {
			t.Errorf("%s: sha256 %s, README says %s", f.name, got, f.sha256)
		}
	}
}

// sim replays the original's writes (dablooms.c 0.9.1) on counters in memory, to predict the
// bytes of the files it wrote.
type sim struct {
	capacity  uint64
	errorRate float64
	scaling   bool
	maxID     uint64
	mem, disk uint64
	filters   []simFilter
}

type simFilter struct {
	FilterLayout
	id       uint64
	count    uint32
	counters []uint8
}

func newSim(t testing.TB, capacity uint64, errorRate float64, scaling bool) *sim {
	s := &sim{capacity: capacity, errorRate: errorRate, scaling: scaling}
	if scaling {
		s.grow(t)
		s.mem = 1
	} else {
		l, err := CountingLayout(capacity, errorRate)
		if err != nil {
			t.Fatal(err)
		}
		s.filters = []simFilter{{FilterLayout: l, counters: make([]uint8, l.Counters)}}
	}
	return s
}

func (s *sim) grow(t testing.TB) *simFilter {
	l, err := Layout(s.capacity, s.errorRate, len(s.filters))
	if err != nil {
		t.Fatal(err)
	}
	s.filters = append(s.filters, simFilter{FilterLayout: l, counters: make([]uint8, l.Counters)})
	return &s.filters[len(s.filters)-1]
}

// change is counting_bloom_add (d = +1) or counting_bloom_remove (d = -1): saturated or zero
// counters are left as they are.
func (f *simFilter) change(k []byte, d int) {
	h := Hash(k)
	for j := 0; j < f.K; j++ {
		c := &f.counters[Index(h, j, f.CountsPerFunc)]
		if (d > 0 && *c < 15) || (d < 0 && *c > 0) {
			*c = uint8(int(*c) + d)
		}
	}
	f.count = uint32(int(f.count) + d)
}

// pick is the newest filter whose start id <= id, or the oldest.
func (s *sim) pick(id uint64) *simFilter {
	for i := len(s.filters) - 1; i > 0; i-- {
		if id >= s.filters[i].id {
			return &s.filters[i]
		}
	}
	return &s.filters[0]
}

func (s *sim) add(t testing.TB, k []byte, id uint64) {
	if !s.scaling {
		s.filters[0].change(k, 1)
		return
	}
	s.disk = 0
	f := s.pick(id)
	if id > s.maxID && uint64(f.count) >= s.capacity-1 {
		f = s.grow(t)
		f.id = s.maxID + 1
	}
	s.maxID = max(s.maxID, id)
	f.change(k, 1)
	s.mem++
}

func (s *sim) remove(k []byte, id uint64) {
	if s.scaling {
		s.disk = 0
		s.mem++
	}
	s.pick(id).change(k, -1)
}

func (s *sim) flush() { s.disk = s.mem }

func (s *sim) bytes() []byte {
	var b []byte
	if s.scaling {
		b = le64(le64(le64(b, s.maxID), s.mem), s.disk)
	}
	for _, f := range s.filters {
		b = le64(b, f.id)
		b = append(b, byte(f.count), byte(f.count>>8), byte(f.count>>16), byte(f.count>>24), 0, 0, 0, 0)
		packed := make([]byte, (len(f.counters)+1)/2)
		for i, c := range f.counters {
			packed[i/2] |= c << (4 * (1 - i%2))
		}
		b = append(b, packed...)
	}
	return b
}

func le64(b []byte, v uint64) []byte {
	for i := 0; i < 8; i++ {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// simulated rebuilds the three testdata files as the README says they were made.
func simulated(t testing.TB, name string) []byte {
	var s *sim
	switch name {
	case "scaling_1000_0.05.bin":
		s = newSim(t, 1000, 0.05, true)
		for i := 0; i < 2500; i++ {
			s.add(t, key(i), uint64(i))
		}
		for i := 0; i < 2500; i += 5 {
			s.remove(key(i), uint64(i))
		}
		s.flush()
	case "scaling_dupids.bin":
		s = newSim(t, 100, 0.1, true)
		for i := 0; i < 500; i++ {
			s.add(t, key(i), 7)
		}
	case "counting_1000_0.05.bin":
		s = newSim(t, 1000, 0.05, false)
		for i := 0; i < 1000; i++ {
			s.add(t, key(i), 0)
		}
		for i := 0; i < 1000; i += 5 {
			s.remove(key(i), 0)
		}
	}
	return s.bytes()
}

// TestSimulationMatchesFiles checks the layout, hash, indices and nibble order all at once:
// replaying the original's writes must give every byte of the files it wrote.
func TestSimulationMatchesFiles(t *testing.T) {
	for _, f := range binFiles {
		want, err := os.ReadFile(tempCopy(t, f.name))
		if err != nil {
			t.Fatal(err)
		}
		got := simulated(t, f.name)
		if len(got) != len(want) {
			t.Errorf("%s: simulated %d bytes, file has %d", f.name, len(got), len(want))
			continue
		}
		diff := 0
		for i := range got {
			if got[i] != want[i] {
				if diff == 0 {
					t.Errorf("%s: first difference at byte %d: simulated %#02x, file %#02x", f.name, i, got[i], want[i])
				}
				diff++
			}
		}
		if diff > 0 {
			t.Errorf("%s: %d of %d bytes differ", f.name, diff, len(got))
		}
	}
}

// refusal is a file and parameters a reader must refuse, the error it must
// return and words its message must hold.
type refusal struct {
	name     string
	content  []byte
	capacity uint64
	e        float64
	want     error
	msg      string
}

// checkRefuses checks that read refuses each case with its error and
// message, returns no file, and neither changes nor creates a file.
func checkRefuses[F any](t *testing.T, read func(path string, capacity uint64, errorRate float64) (*F, error), cases []refusal) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, "f.bin", c.content)
			before := sha(t, p)
			r, err := read(p, c.capacity, c.e)
			if !errors.Is(err, c.want) || r != nil {
				t.Fatalf("read = %v, %v; want error %v", r, err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
			if after := sha(t, p); after != before {
				t.Errorf("file changed: sha256 %s, was %s", after, before)
			}
		})
	}
}
