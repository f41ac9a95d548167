package recover

import (
	"bytes"
	"flag"
	"math/rand"
	"sync"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
	"github.com/dablooms/dablooms/seqnum"
)

// fuzzBase is a small store of two filters (keys 1..80 of capacity 50), with
// a dead writer's add cut short in the middle, on this boot: an interrupted
// file, so the fuzzer starts next to every check.
var fuzzBase = sync.OnceValues(func() ([]byte, error) {
	r := newCrashRegion()
	r.reset(nil, rand.New(rand.NewSource(1)))
	f, err := createRegion(r, booted(&scaling.Options{Capacity: 50, ErrorRate: 0.05, Layout: counting4.Classic, Seed: 3}, testBoot))
	if err != nil {
		return nil, err
	}
	for i := 1; i <= 80; i++ {
		if err := f.Add(key(i), uint64(i)); err != nil {
			return nil, err
		}
	}
	if err := f.Flush(); err != nil {
		return nil, err
	}
	if err := f.Add(key(81), 81); err != nil {
		return nil, err
	}
	f.Close()
	b := bytes.Clone(r.memB[:r.size])
	m, err := header.Pick(b[:2*header.MetaSize], int64(len(b)))
	if err != nil {
		return nil, err
	}
	simRun(newSimImage(b), m.Filters[1], m.Params.Seed, simOp{add: true, filter: 1, key: key(82), slot: 4, rec: 1}, 7)
	return b, nil
})

// fuzzSource holds the keys whose Add returned in fuzzBase.
var fuzzSource = keysSource(81)

// checkImage is the property every fuzz input must satisfy: Verify, Repair
// and Rebuild never panic and never change their input; a file Verify calls
// clean or unflushed opens; a file Repair or Rebuild calls clean opens and
// verifies clean again.
func checkImage(t *testing.T, data []byte) {
	img := make([]byte, len(data)) // 8-byte aligned, for opening
	copy(img, data)
	boot := parseBootID(testBoot)
	a, err := analyze(bytesImage(img), boot, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := a.report("")
	if !bytes.Equal(img, data) {
		t.Fatal("Verify changed its input")
	}
	if rep.State <= Unflushed {
		f, err := openRegion(byteRegion{img}, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
		if err != nil {
			t.Fatalf("Verify says %s, Open fails: %v", rep.State, err)
		}
		f.Close()
	}
	for _, src := range []Source{nil, fuzzSource} {
		p, err := a.plan(bytesImage(img), src)
		if err != nil {
			continue // refused (no valid metadata, or the source does not fit)
		}
		out, err := p.apply(bytesImage(img))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(img, data) {
			t.Fatal("planning changed its input")
		}
		a2, err := analyze(bytesImage(out), boot, nil)
		if err != nil {
			t.Fatal(err)
		}
		r2 := a2.report("")
		if src != nil && r2.State != Clean {
			dumpReport(t, rep)
			dumpReport(t, r2)
			t.Fatalf("after Rebuild: %s", r2.State)
		}
		if r2.State == Clean {
			f, err := openRegion(byteRegion{out}, booted(&scaling.OpenOptions{ReadOnly: true}, testBoot))
			if err != nil {
				t.Fatalf("repaired to clean, Open fails: %v", err)
			}
			f.Close()
		}
	}
}

// FuzzVerify feeds raw bytes.
func FuzzVerify(f *testing.F) {
	base, err := fuzzBase()
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{})
	f.Add([]byte("DABLOOMS"))
	f.Add(base[:header.MetaSize])
	f.Add(base[:2*header.MetaSize])
	if !fuzzing() {
		// Whole files: in plain go test only (they slow the fuzzer down;
		// FuzzVerifyStructured explores whole files).
		f.Add(base[:header.DataOffset])
		f.Add(base)
		clipped := bytes.Clone(base)
		clipped[header.StateOffset] ^= 0xff
		f.Add(clipped)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkImage(t, data)
	})
}

// FuzzVerifyStructured mutates a valid store and then seals both metadata
// copies with their checksum, so that the fuzzer gets past the checksum to
// the checks behind it. Each 11-byte op is a selector, a 2-byte position and
// an 8-byte value.
func FuzzVerifyStructured(f *testing.F) {
	base, err := fuzzBase()
	if err != nil {
		f.Fatal(err)
	}
	op := func(sel byte, pos uint16, v uint64) []byte {
		b := []byte{sel, byte(pos), byte(pos >> 8), 0, 0, 0, 0, 0, 0, 0, 0}
		le.PutUint64(b[3:], v)
		return b
	}
	f.Add([]byte{})
	f.Add(op(0, 104, 3))                                       // filter count
	f.Add(op(0, 256+48, 0))                                    // k of filter 0
	f.Add(op(0, 256+56+24, 1<<40))                             // offset of filter 1
	f.Add(op(1, 0, seqnum.Pack(0, seqnum.Dirty)))              // state: epoch 0
	f.Add(op(1, 2, 65))                                        // published
	f.Add(op(2, 0, 1<<63))                                     // items of filter 0
	f.Add(op(2, 1, 99))                                        // mark of filter 0
	f.Add(op(3, 4*16+1, 3))                                    // op word of slot 4, record 0
	f.Add(append(op(3, 4*16+2+1, 0x5), op(3, 4*16+2+3, 1)...)) // changed, doubt of slot 4, record 1
	f.Add(op(4, 100, 0xffffffffffffffff))                      // counters
	f.Fuzz(func(t *testing.T, ops []byte) {
		img := bytes.Clone(base)
		for len(ops) >= 11 {
			sel, pos, v := ops[0], uint64(ops[1])|uint64(ops[2])<<8, le.Uint64(ops[3:])
			ops = ops[11:]
			var off int64
			switch sel % 5 {
			case 0: // a word of the metadata (both copies)
				off = int64(pos%(header.MetaSize/8-1)) * 8
				le.PutUint64(img[off:], v)
				le.PutUint64(img[header.MetaSize+off:], v)
				continue
			case 1: // a word of the hot page
				off = header.HotOffset + int64(pos%(header.PageSize/8))*8
			case 2: // a word of the filter lines
				off = header.FilterLinesOffset + int64(pos%(header.PageSize/8))*8
			case 3: // a word of the slots
				off = header.SlotsOffset + int64(pos%(header.NumSlots*header.SlotSize/8))*8
			default: // counters
				off = header.DataOffset + int64(pos)*8%(int64(len(img))-header.DataOffset)
			}
			le.PutUint64(img[off:], v)
		}
		sealMeta(img)
		checkImage(t, img)
	})
}

// TestFuzzBase checks that the fuzzers start from an interrupted file that
// Repair makes clean.
func TestFuzzBase(t *testing.T) {
	base, err := fuzzBase()
	if err != nil {
		t.Fatal(err)
	}
	out, before, after := repairBytes(t, base)
	if before.State != Interrupted || after.State != Clean {
		dumpReport(t, before)
		t.Fatalf("base is %s, repaired %s", before.State, after.State)
	}
	if fn, err := falseNegatives(out, testBoot, map[int]bool{1: true, 50: true, 81: true}); err != nil || fn != 0 {
		t.Fatalf("%d false negatives (%v)", fn, err)
	}
}

// fuzzing reports whether the test binary runs with -test.fuzz.
func fuzzing() bool {
	fl := flag.Lookup("test.fuzz")
	return fl != nil && fl.Value.String() != ""
}

// A directory entry whose first id is above the largest id (no library
// writes one; the fuzzer found it) bounds nothing: Rebuild of its filter,
// whose line is garbage too, asks the source from id 0, so the file comes
// out clean with every key (it wrote an inverted range before, and asked
// for no key at all).
func TestRebuildIgnoresImpossibleFirstID(t *testing.T) {
	base, err := fuzzBase()
	if err != nil {
		t.Fatal(err)
	}
	img := bytes.Clone(base)
	const entry0FirstID = 256 // the directory's entry 0, its first id (header: offDirectory, entFirstID)
	for c := range 2 {
		le.PutUint64(img[c*header.MetaSize+entry0FirstID:], 14478196230323782143)
	}
	le.PutUint64(img[header.FilterLinesOffset+header.FilterReservedOffset:], 1) // filter 0's line: garbage
	sealMeta(img)
	a, err := analyze(bytesImage(img), parseBootID(testBoot), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.plan(bytesImage(img), fuzzSource)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.apply(bytesImage(img))
	if err != nil {
		t.Fatal(err)
	}
	a2, err := analyze(bytesImage(out), parseBootID(testBoot), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := a2.report(""); r.State != Clean {
		dumpReport(t, r)
		t.Fatalf("after Rebuild: %s", r.State)
	}
	truth := map[int]bool{}
	for i := 1; i <= 81; i++ {
		truth[i] = true
	}
	if fn, err := falseNegatives(out, testBoot, truth); err != nil || fn != 0 {
		t.Fatalf("%d of 81 keys missing after Rebuild (%v)", fn, err)
	}
}
