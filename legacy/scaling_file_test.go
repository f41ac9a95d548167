package legacy

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"
)

type wantFilter struct {
	offset, startID uint64
	count           uint32
	k               int
	cpf             uint32
	bytes           uint64
}

// TestReadScalingTestdata checks the state the testdata README documents.
func TestReadScalingTestdata(t *testing.T) {
	for _, c := range []struct {
		name                  string
		capacity              uint64
		e                     float64
		maxID, mem, disk      uint64
		filters               []wantFilter
		present               func(i int) bool
		keys, maxFalsePosRate int // keys key-0 .. key-<keys-1>; false positives in percent
	}{
		{
			name: "scaling_1000_0.05.bin", capacity: 1000, e: 0.05,
			maxID: 2499, mem: 3001, disk: 3001,
			filters: []wantFilter{
				{24, 0, 799, 6, 1280, 3856},
				{3880, 999, 799, 7, 1303, 4577},
				{8457, 1998, 402, 8, 1321, 5300},
			},
			present: func(i int) bool { return i < 2500 && i%5 != 0 },
			keys:    20000, maxFalsePosRate: 5,
		},
		{
			name: "scaling_dupids.bin", capacity: 100, e: 0.1,
			maxID: 7, mem: 501, disk: 0,
			filters: []wantFilter{{24, 0, 500, 5, 125, 329}},
			present: func(i int) bool { return i < 500 },
			keys:    5000, maxFalsePosRate: 95, // 500 keys at capacity 100: overfull
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := tempCopy(t, c.name)
			before := sha(t, p)
			s, err := ReadScaling(p, c.capacity, c.e)
			if err != nil {
				t.Fatal(err)
			}
			if after := sha(t, p); after != before {
				t.Errorf("file changed by reading: sha256 %s, was %s", after, before)
			}
			if s.MaxID != c.maxID || s.MemSeqnum != c.mem || s.DiskSeqnum != c.disk {
				t.Errorf("header max_id %d mem_seqnum %d disk_seqnum %d, want %d %d %d", s.MaxID, s.MemSeqnum, s.DiskSeqnum, c.maxID, c.mem, c.disk)
			}
			if len(s.Filters) != len(c.filters) {
				t.Fatalf("%d filters, want %d", len(s.Filters), len(c.filters))
			}
			for i, w := range c.filters {
				f := s.Filters[i]
				got := wantFilter{f.Offset, f.StartID, f.Count, f.K, f.CountsPerFunc, f.Bytes}
				if got != w {
					t.Errorf("filter %d: %+v, want %+v", i, got, w)
				}
				if v := f.CounterValues(); uint64(len(v)) != f.Counters || uint64(len(v)) != uint64(f.K)*uint64(f.CountsPerFunc) {
					t.Errorf("filter %d: %d counter values, want %d", i, len(v), f.Counters)
				}
			}
			checkContains(t, s.Contains, c.present, c.keys, c.maxFalsePosRate)
		})
	}
}

// checkContains: no false negatives among key-i, i < keys, and at most maxRate % false
// positives.
func checkContains(t *testing.T, contains func([]byte) bool, present func(int) bool, keys, maxRate int) {
	t.Helper()
	var fn, fp, absent int
	for i := 0; i < keys; i++ {
		got := contains(key(i))
		switch {
		case present(i) && !got:
			fn++
		case !present(i):
			absent++
			if got {
				fp++
			}
		}
	}
	if fn != 0 {
		t.Errorf("%d false negatives", fn)
	}
	if fp*100 > maxRate*absent {
		t.Errorf("%d false positives among %d absent keys, more than %d %%", fp, absent, maxRate)
	}
	t.Logf("%d false positives among %d absent keys", fp, absent)
}

// TestScalingContainsAnyFilter: the decision is the same whatever filter holds the key; a key is held
// by some filter exactly when Contains says so.
func TestScalingContainsAnyFilter(t *testing.T) {
	s, err := ReadScaling(tempCopy(t, "scaling_1000_0.05.bin"), 1000, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000; i++ {
		any := false
		for _, f := range s.Filters {
			any = any || f.Contains(key(i))
		}
		if any != s.Contains(key(i)) {
			t.Fatalf("key-%d: Contains %v, filters %v", i, s.Contains(key(i)), any)
		}
	}
	// Keys added with ids of filter 1 are in filter 1 (the same key's counters in another filter
	// are unrelated).
	for i := 1000; i < 1998; i++ {
		if i%5 != 0 && !s.Filters[1].Contains(key(i)) {
			t.Fatalf("key-%d not in filter 1", i)
		}
	}
}

// TestReadScalingRefuses: files the parameters do not describe are refused, and no file is ever
// changed or created.
func TestReadScalingRefuses(t *testing.T) {
	orig := mustRead(t, "scaling_1000_0.05.bin")
	header := orig[:24]
	checkRefuses(t, ReadScaling, []refusal{
		{"wrong capacity", orig, 999, 0.05, ErrSizeMismatch, "file is 13757 bytes; capacity 999 at error 0.05 implies sizes "},
		{"wrong error rate", orig, 1000, 0.01, ErrSizeMismatch, "not a dablooms 0.9.1 file with these parameters"},
		{"truncated", orig[:len(orig)-1], 1000, 0.05, ErrSizeMismatch, "file is 13756 bytes; capacity 1000 at error 0.05 implies sizes 3880, 8457, 13757, ...: not a dablooms 0.9.1 file"},
		{"truncated in header", orig[:20], 1000, 0.05, ErrSizeMismatch, "file is 20 bytes"},
		{"one byte more", append(orig[:len(orig):len(orig)], 0), 1000, 0.05, ErrSizeMismatch, "implies sizes 3880, 8457, 13757, 19781, ..."},
		{"a page more", append(orig[:len(orig):len(orig)], make([]byte, 4096)...), 1000, 0.05, ErrSizeMismatch, "file is 17853 bytes"},
		{"empty", nil, 1000, 0.05, ErrSizeMismatch, "file is 0 bytes; capacity 1000 at error 0.05 implies sizes 3880, ..."},
		{"header only", header, 1000, 0.05, ErrSizeMismatch, "file is 24 bytes"},
		{"capacity 0", orig, 0, 0.05, ErrBadParams, "capacity 0"},
		{"capacity too large", orig, 1 << 32, 0.05, ErrBadParams, "capacity"},
		{"error rate 0", orig, 1000, 0, ErrBadParams, "error rate 0"},
		{"error rate 1", orig, 1000, 1, ErrBadParams, "error rate 1"},
		{"error rate negative", orig, 1000, -0.05, ErrBadParams, "error rate"},
		{"error rate NaN", orig, 1000, math.NaN(), ErrBadParams, "error rate NaN"},
		{"error rate Inf", orig, 1000, math.Inf(1), ErrBadParams, "error rate +Inf"},
		{"a counting file", mustRead(t, "counting_1000_0.05.bin"), 1000, 0.05, ErrSizeMismatch, "file is 3136 bytes"},
	})
}

func mustRead(t *testing.T, name string) []byte {
	b, err := os.ReadFile(testdata(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadMissing: a missing file is reported as such and not created; a directory is refused.
func TestReadMissing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "absent.bin")
	if _, err := ReadScaling(p, 1000, 0.05); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadScaling of a missing file: %v", err)
	}
	if _, err := ReadCounting(p, 1000, 0.05); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadCounting of a missing file: %v", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file was created: %v", err)
	}
	if _, err := ReadScaling(dir, 1000, 0.05); err == nil {
		t.Error("ReadScaling of a directory succeeded")
	}
}

// TestReadScalingSynthetic: files the original would write, at sizes of 1..4 filters, and
// their counter nibbles.
func TestReadScalingSynthetic(t *testing.T) {
	for n := 1; n <= 4; n++ {
		l, err := Layout(100, 0.1, n-1)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, l.Offset+l.Bytes)
		copy(b, le64(le64(le64(nil, 9), 8), 7))
		b[l.Offset+FilterHeaderSize] = 0xa5 // counters 0 and 1 of the last filter
		s, err := ReadScaling(writeTemp(t, "f.bin", b), 100, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Filters) != n || s.MaxID != 9 || s.MemSeqnum != 8 || s.DiskSeqnum != 7 {
			t.Fatalf("%d filters, header %d %d %d; want %d, 9 8 7", len(s.Filters), s.MaxID, s.MemSeqnum, s.DiskSeqnum, n)
		}
		last := &s.Filters[n-1]
		if last.Counter(0) != 0xa || last.Counter(1) != 0x5 || last.Counter(2) != 0 {
			t.Errorf("counters %d %d %d, want 10 5 0", last.Counter(0), last.Counter(1), last.Counter(2))
		}
		if s.Contains([]byte("x")) {
			t.Error("an empty filter contains a key")
		}
	}
}

// FuzzReadScaling: no input, whatever the parameters, makes ReadScaling panic or change the file,
// and what it accepts is consistent.
func FuzzReadScaling(f *testing.F) {
	for _, c := range []struct {
		name     string
		capacity uint32
		e        float64
	}{{"scaling_1000_0.05.bin", 1000, 0.05}, {"scaling_dupids.bin", 100, 0.1}, {"counting_1000_0.05.bin", 1000, 0.05}} {
		b, err := os.ReadFile(filepath.Join(testdataDir, c.name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, c.capacity, c.e)
	}
	f.Add([]byte{}, uint32(100), 0.1)
	f.Add(make([]byte, 24), uint32(100), 0.1)
	f.Add(make([]byte, 353), uint32(100), 0.1)
	f.Add(make([]byte, 353), uint32(100), 0.0)
	f.Add(make([]byte, 353), uint32(0), 0.1)
	f.Add(make([]byte, 1000), uint32(1), 1e-300)
	f.Add(make([]byte, 24+18+19), uint32(1), 0.5)
	f.Fuzz(func(t *testing.T, data []byte, capacity uint32, e float64) {
		p := writeTemp(t, "f.bin", data)
		s, err := ReadScaling(p, uint64(capacity), e)
		if b, rerr := os.ReadFile(p); rerr != nil || string(b) != string(data) {
			t.Fatalf("file changed or unreadable: %v", rerr)
		}
		if err != nil {
			if !errors.Is(err, ErrSizeMismatch) && !errors.Is(err, ErrBadParams) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		end := uint64(ScalingHeaderSize)
		for i := range s.Filters {
			f := &s.Filters[i]
			if f.Offset != end || f.Bytes != FilterHeaderSize+(f.Counters+1)/2 {
				t.Fatalf("filter %d: %+v at %d", i, f.FilterLayout, end)
			}
			end += f.Bytes
			f.ContainsHash(0)
			f.Counter(f.Counters - 1)
		}
		if end != uint64(len(data)) || len(s.Filters) == 0 {
			t.Fatalf("%d filters end at %d in %d bytes", len(s.Filters), end, len(data))
		}
		s.Contains(data)
	})
}
