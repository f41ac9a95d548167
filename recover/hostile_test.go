package recover

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
	"github.com/dablooms/dablooms/seqnum"
)

// Metadata field offsets (docs/FORMAT.md).
const (
	mMajor      = 8
	mMinor      = 10
	mFlags      = 16
	mCapacity   = 32
	mNumFilters = 104
	mDirectory  = 256
	mEntrySize  = 56
	eOffset     = 24
	eLength     = 32
	eK          = 48
)

// sealMeta recomputes the checksum of both metadata copies (the last 4
// bytes of each, header.Checksum).
func sealMeta(b []byte) {
	for c := range 2 {
		base := c * header.MetaSize
		if len(b) < base+header.MetaSize {
			return
		}
		m := b[base : base+header.MetaSize]
		_, sum := header.Checksum(m)
		le.PutUint32(m[header.MetaSize-4:], sum)
	}
}

// both applies f to each metadata copy, then seals them.
func both(f func(m []byte)) func([]byte) []byte {
	return func(b []byte) []byte {
		for c := range 2 {
			f(b[c*header.MetaSize : (c+1)*header.MetaSize])
		}
		sealMeta(b)
		return b
	}
}

func entry(i int) int { return mDirectory + i*mEntrySize }

type hostileCase struct {
	name   string
	mutate func([]byte) []byte // nil: special file, made by special
	// special makes a path that is not a store file.
	special func(t *testing.T, dir string) string
	state   State // Verify's verdict
	verr    error // Verify's error instead of a report
	err     error // sentinel of the report's Err() (nil: none) and of Open's error
	openOK  bool  // Open succeeds
	repair  string
}

// Repair outcomes.
const (
	refuse  = "refuse"  // error, the file is unchanged
	same    = "same"    // no error, nothing to repair, the file is unchanged
	clean   = "clean"   // repaired to clean
	rebuild = "rebuild" // Repair leaves it for Rebuild, which makes it clean
)

func hostileCases() []hostileCase {
	word := func(off int64, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { le.PutUint64(b[off:], v); return b }
	}
	return []hostileCase{
		{name: "zero-length", mutate: func([]byte) []byte { return nil }, state: Corrupt, err: header.ErrNotDablooms, repair: refuse},
		{name: "shorter than the header", mutate: func(b []byte) []byte { return b[:3000] }, state: Corrupt, err: header.ErrNotDablooms, repair: refuse},
		{name: "metadata only", mutate: func(b []byte) []byte { return b[:2*header.MetaSize] }, state: Corrupt, err: header.ErrNotDablooms, repair: refuse},
		{name: "wrong magic", mutate: both(func(m []byte) { copy(m, "NOTBLOOM") }), state: Corrupt, err: header.ErrNotDablooms, repair: refuse},
		{name: "byte-swapped magic", mutate: both(func(m []byte) { slices.Reverse(m[:8]) }), state: Corrupt, err: header.ErrNotDablooms, repair: refuse},
		{name: "future major version", mutate: both(func(m []byte) { le.PutUint16(m[mMajor:], 2) }), state: Corrupt, err: header.ErrVersion, repair: refuse},
		{name: "newer minor version", mutate: both(func(m []byte) { le.PutUint16(m[mMinor:], 9) }), state: Clean, openOK: true, repair: same},
		{name: "unknown flags", mutate: both(func(m []byte) { le.PutUint64(m[mFlags:], 1<<40) }), state: Corrupt, err: header.ErrVersion, repair: refuse},
		{name: "checksum bad in copy A", mutate: func(b []byte) []byte { b[3000] ^= 1; return b }, state: Damaged, err: header.ErrChecksum, openOK: true, repair: clean},
		{name: "checksum bad in copy B", mutate: func(b []byte) []byte { b[header.MetaSize+100] ^= 0x80; return b }, state: Damaged, err: header.ErrChecksum, openOK: true, repair: clean},
		{name: "checksum bad in both copies", mutate: func(b []byte) []byte { b[3000] ^= 1; b[header.MetaSize+3000] ^= 1; return b }, state: Corrupt, err: header.ErrChecksum, repair: refuse},
		{name: "k = 0", mutate: both(func(m []byte) { le.PutUint16(m[entry(0)+eK:], 0) }), state: Corrupt, err: header.ErrCorrupt, repair: refuse},
		{name: "k huge", mutate: both(func(m []byte) { le.PutUint16(m[entry(1)+eK:], 65535) }), state: Corrupt, err: header.ErrCorrupt, repair: refuse},
		{name: "offset overflows", mutate: both(func(m []byte) { le.PutUint64(m[entry(1)+eOffset:], 1<<62) }), state: Corrupt, err: header.ErrCorrupt, repair: refuse},
		{name: "length overflows", mutate: both(func(m []byte) { le.PutUint64(m[entry(0)+eLength:], math.MaxUint64-4095) }), state: Corrupt, err: header.ErrCorrupt, repair: refuse},
		{name: "capacity overflows", mutate: both(func(m []byte) { le.PutUint64(m[mCapacity:], math.MaxUint64) }), state: Corrupt, err: header.ErrCorrupt, repair: refuse},
		{name: "filter count overflows", mutate: both(func(m []byte) { le.PutUint32(m[mNumFilters:], 1<<31) }), state: Corrupt, err: header.ErrCorrupt, repair: refuse},
		// Truncated (issue 11, item 15): the filters cut short are rebuilt.
		{name: "directory past end of file", mutate: func(b []byte) []byte { return b[:len(b)-header.PageSize] }, state: Corrupt, err: header.ErrCorrupt, repair: rebuild},
		// A directory claiming far more than the file holds is not a
		// truncation to rebuild: Rebuild would allocate what it claims.
		{name: "huge last filter", mutate: both(func(m []byte) { le.PutUint64(m[entry(1)+eLength:], 1<<39) }), state: Corrupt, err: header.ErrCorrupt, repair: refuse},
		{name: "misaligned offset", mutate: both(func(m []byte) { le.PutUint64(m[entry(1)+eOffset:], le.Uint64(m[entry(1)+eOffset:])+8) }), state: Corrupt, err: header.ErrCorrupt, repair: refuse},
		{name: "misaligned length", mutate: both(func(m []byte) { le.PutUint64(m[entry(0)+eLength:], le.Uint64(m[entry(0)+eLength:])+8) }), state: Corrupt, err: header.ErrCorrupt, repair: refuse},
		{name: "trailing partial page", mutate: func(b []byte) []byte { return append(b, make([]byte, 100)...) }, state: Clean, openOK: true, repair: clean},
		{name: "state epoch 0", mutate: word(header.StateOffset, seqnum.Pack(0, seqnum.Clean)), state: Corrupt, err: header.ErrCorrupt, repair: rebuild},
		{name: "negative item count", mutate: word(header.FilterLineOffset(0)+header.FilterItemsOffset, uint64(math.MaxUint64-4)), state: Damaged, err: header.ErrCorrupt, repair: clean},
		{name: "published count impossible", mutate: word(header.PublishedOffset, 1000), state: Corrupt, err: header.ErrCorrupt, repair: rebuild},
		{name: "disk_seqnum impossible", mutate: word(header.DiskSeqOffset, 1<<50), state: Damaged, err: header.ErrCorrupt, openOK: true, repair: clean},
		{name: "dirty mark from the future", mutate: word(header.FilterLineOffset(1)+header.FilterMarkOffset, 1<<40), state: Corrupt, err: header.ErrCorrupt, openOK: true, repair: rebuild},
		{name: "record of op type 3", mutate: word(header.RecordOffset(7, 2)+header.RecOpOffset, uint64(header.IdleOp(5)|3)), state: Damaged, err: header.ErrCorrupt, openOK: true, repair: clean},
		{name: "newest filter sealed", mutate: func(b []byte) []byte {
			off := header.FilterLineOffset(1) + header.FilterMaxIDOffset
			le.PutUint64(b[off:], le.Uint64(b[off:])|header.Sealed)
			return b
		}, state: Damaged, err: header.ErrCorrupt, openOK: true, repair: clean},
		{name: "counters damaged", mutate: func(b []byte) []byte { b[header.DataOffset+64] ^= 0x10; return b }, state: Corrupt, err: header.ErrCorrupt, openOK: true, repair: rebuild},
		// Fields only a cross-check sees (issue 38 item 2; fieldchecks.go).
		{name: "retired word ahead in a clean file", mutate: word(header.RetiredOffset, 1), state: Damaged, err: header.ErrCorrupt, repair: clean},
		{name: "flush count past the epoch", mutate: word(header.FlushCountOffset, 1<<40), state: Damaged, err: header.ErrCorrupt, openOK: true, repair: clean},
		{name: "sealed range lowered", mutate: word(header.FilterLineOffset(0)+header.FilterMaxIDOffset, 5|header.Sealed), state: Damaged, err: header.ErrCorrupt, openOK: true, repair: clean},
		{name: "slot header reserved word", mutate: word(header.SlotOffset(3)+header.SlotReservedOffset, 9), state: Damaged, err: header.ErrCorrupt, openOK: true, repair: clean},
		{name: "slot header unused bytes", mutate: func(b []byte) []byte { b[header.SlotOffset(60)+40] = 1; return b }, state: Damaged, err: header.ErrCorrupt, openOK: true, repair: clean},
		{name: "changed-map byte 2", mutate: checkPages(1, func(l header.SumLayout, c []byte) { c[3] = 2 }), state: Damaged, err: header.ErrCorrupt, openOK: true, repair: clean},
		{name: "changed-map padding", mutate: checkPages(0, func(l header.SumLayout, c []byte) { c[l.Covered] = 1 }), state: Damaged, err: header.ErrCorrupt, openOK: true, repair: clean},
		{name: "checksum padding", mutate: checkPages(1, func(l header.SumLayout, c []byte) { c[len(c)-1] = 0x80 }), state: Damaged, err: header.ErrCorrupt, openOK: true, repair: clean},
		{name: "directory", special: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "d")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, verr: ErrNotRegular, repair: refuse},
		{name: "FIFO", special: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "fifo")
			if err := mkfifo(p); err != nil {
				t.Skip("mkfifo:", err)
			}
			return p
		}, verr: ErrNotRegular, repair: refuse},
		{name: "device", special: func(*testing.T, string) string { return "/dev/null" }, verr: ErrNotRegular, repair: refuse},
	}
}

// checkPages returns a mutation that applies f to the check pages (from
// the changed map to the end) of directory entry e.
func checkPages(e int, f func(l header.SumLayout, check []byte)) func([]byte) []byte {
	return func(b []byte) []byte {
		p, err := header.Pick(b[:2*header.MetaSize], int64(len(b)))
		if err != nil {
			panic(err)
		}
		for _, d := range p.Meta.Filters {
			if l, ok := d.SumLayout(); ok && d.Slot == e {
				f(l, b[l.MapOffset:l.End])
				return b
			}
		}
		panic("no check pages")
	}
}

// hostileBase is a clean store of two filters holding keys 1..250.
func hostileBase(t *testing.T) []byte {
	path := newFile(t, 200, counting4.Classic, 250)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostileSource holds the keys of hostileBase.
var hostileSource = keysSource(250)

// TestHostileFiles: each bad file gets the right verdict and error from
// Verify, Open and Repair, nothing panics, and nothing but a successful
// repair changes the file.
func TestHostileFiles(t *testing.T) {
	base := hostileBase(t)
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var path string
			if tc.special != nil {
				path = tc.special(t, dir)
			} else {
				path = filepath.Join(dir, "h.dbl")
				if err := os.WriteFile(path, tc.mutate(slices.Clone(base)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var sum [32]byte
			if tc.special == nil {
				sum = sum256(t, path)
			}
			unchanged := func(what string) {
				t.Helper()
				if tc.special == nil && sum256(t, path) != sum {
					t.Fatalf("%s changed the file", what)
				}
			}
			rep, err := VerifyWithOptions(path, booted(&VerifyOptions{}, testBoot))
			if tc.verr != nil {
				if !errors.Is(err, tc.verr) {
					t.Fatalf("Verify: %v, want %v", err, tc.verr)
				}
				if _, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot)); err == nil {
					t.Fatal("Open succeeded")
				}
				if _, err := Repair(path, booted(&RepairOptions{}, testBoot)); !errors.Is(err, tc.verr) {
					t.Fatalf("Repair: %v, want %v", err, tc.verr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			unchanged("Verify")
			if rep.State != tc.state {
				dumpReport(t, rep)
				t.Fatalf("Verify says %s, want %s", rep.State, tc.state)
			}
			if e := rep.Err(); tc.err != nil && !errors.Is(e, tc.err) || tc.err == nil && e != nil {
				t.Fatalf("report error %v, want %v", e, tc.err)
			}
			for _, f := range rep.Findings {
				if f.State >= Damaged && f.Offset < 0 && f.Field != "size" {
					t.Errorf("finding not located: %v", f)
				}
			}
			f, err := scaling.Open(path, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
			if tc.openOK != (err == nil) {
				t.Fatalf("Open: %v (want success: %v)", err, tc.openOK)
			}
			if err == nil {
				f.Close()
			} else if tc.err != nil && !errors.Is(err, tc.err) && !errors.Is(err, header.ErrCorrupt) {
				t.Fatalf("Open: %v, want %v", err, tc.err)
			}
			unchanged("Open")
			if !tc.openOK {
				if _, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot)); err == nil {
					t.Fatal("read-write Open succeeded")
				}
				unchanged("a refused read-write Open")
			}

			got, err := Repair(path, booted(&RepairOptions{}, testBoot))
			switch tc.repair {
			case refuse:
				if err == nil {
					t.Fatalf("Repair succeeded: %s", got.State)
				}
				unchanged("a refused Repair")
				if _, err := Rebuild(path, hostileSource, booted(&RepairOptions{}, testBoot)); err == nil {
					t.Fatal("Rebuild succeeded")
				}
				unchanged("a refused Rebuild")
			case same:
				if err != nil || got.State != tc.state {
					t.Fatalf("Repair: %v, %v", err, got)
				}
				unchanged("Repair with nothing to do")
			case clean, rebuild:
				if err != nil {
					t.Fatalf("Repair: %v", err)
				}
				if tc.repair == rebuild {
					if got.State == Clean {
						t.Fatal("Repair made it clean without the data")
					}
					if got, err = Rebuild(path, hostileSource, booted(&RepairOptions{}, testBoot)); err != nil {
						t.Fatalf("Rebuild: %v", err)
					}
				}
				if got.State != Clean {
					dumpReport(t, got)
					t.Fatalf("after repair: %s", got.State)
				}
				after := verifyT(t, path)
				if after.State != Clean {
					dumpReport(t, after)
					t.Fatalf("Verify after repair: %s", after.State)
				}
				f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
				if err != nil {
					t.Fatalf("Open after repair: %v", err)
				}
				for i := 1; i <= 250; i++ {
					if !f.Contains(key(i)) {
						t.Fatalf("key %d lost", i)
					}
				}
				f.Close()
			}
		})
	}
}
