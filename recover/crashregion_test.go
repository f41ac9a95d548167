package recover

import (
	"fmt"
	"math/rand"
	"unsafe"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

const (
	modelPage   = header.PageSize
	modelSector = 512
	modelCap    = 8 << 20 // bytes of memory a model region can grow to
)

// crashRegion is a page-level model of a file under the store, for crash
// tests: a memory image that the library reads and writes through the
// mmapfile.Region interface (contiguous, with a capacity fixed in advance,
// so that slices handed out never move), and a durable image that receives
// pages only when the library syncs them — and, at random moments, single
// pages early, as kernel writeback does. At a crash the memory is frozen;
// image then builds what the disk holds after the reboot: each page that
// differs between the two is old, new or torn (each 512-byte sector old, new
// or garbage), and an unsynced size change survives or not.
type crashRegion struct {
	mem  []uint64
	memB []byte
	size int64

	dur     []byte
	durSize int64

	rng *rand.Rand
	// wbProb is the chance of an early writeback of one page at each event.
	wbProb float64
	// noEarlyMark switches the dirty-first rule off (negative control): a
	// sync of a range that does not start at 0 — the dirty mark's sync, the
	// clean state's — is ignored; Flush's sync of the whole file still works.
	noEarlyMark bool

	events    int
	crashAt   int // event at which the machine crashes; -1: none
	crashed   bool
	crashMem  []byte
	crashSize int64
	closed    bool

	trace func(format string, args ...any) // debugging: DABLOOMS_CRASH_TRACE=1
	// onFullSync, if set, is called after a sync of the whole file.
	onFullSync func()
}

func (r *crashRegion) tracef(format string, args ...any) {
	if r.trace != nil {
		r.trace(format, args...)
	}
}

func newCrashRegion() *crashRegion {
	r := &crashRegion{mem: make([]uint64, modelCap/8), dur: make([]byte, modelCap)}
	r.memB = unsafe.Slice((*byte)(unsafe.Pointer(&r.mem[0])), modelCap)
	return r
}

// reset loads an image that is both in memory and durable.
func (r *crashRegion) reset(img []byte, rng *rand.Rand) {
	clear(r.memB[len(img):max(r.size, r.crashSize, int64(len(img)))])
	clear(r.dur[len(img):max(r.durSize, r.crashSize, r.size, int64(len(img)))])
	copy(r.memB, img)
	copy(r.dur, img)
	r.size, r.durSize = int64(len(img)), int64(len(img))
	r.rng = rng
	r.events, r.crashAt, r.crashed, r.closed = 0, -1, false, false
	r.crashMem, r.crashSize = r.crashMem[:0], 0
	r.noEarlyMark = false
}

// event is a moment at which the machine may crash or write back a page.
func (r *crashRegion) event() {
	if r.crashed {
		return
	}
	r.events++
	if r.events == r.crashAt {
		r.tracef("event %d: CRASH", r.events)
		r.crash()
		return
	}
	if r.wbProb > 0 && r.rng.Float64() < r.wbProb {
		r.writeback()
	}
}

func (r *crashRegion) crash() {
	r.crashed = true
	r.crashMem = append(r.crashMem[:0], r.memB[:r.size]...)
	r.crashSize = r.size
}

func (r *crashRegion) writeback() {
	pages := r.size / modelPage
	if pages == 0 {
		return
	}
	p := r.rng.Int63n(pages) * modelPage
	r.tracef("event %d: writeback page %d", r.events, p/modelPage)
	copy(r.dur[p:p+modelPage], r.memB[p:p+modelPage])
}

func (r *crashRegion) check(off, n int64) error {
	if r.closed {
		return mmapfile.ErrClosed
	}
	if off < 0 || n < 0 || off > r.size || n > r.size-off {
		return fmt.Errorf("%w: [%d, +%d) of %d", mmapfile.ErrRange, off, n, r.size)
	}
	return nil
}

func (r *crashRegion) Size() int64 { r.event(); return r.size }

func (r *crashRegion) Bytes(off, n int64) ([]byte, error) {
	r.event()
	if err := r.check(off, n); err != nil {
		return nil, err
	}
	return r.memB[off : off+n : off+n], nil
}

func (r *crashRegion) Words(off, n int64) ([]uint64, error) {
	r.event()
	if off%8 != 0 {
		return nil, fmt.Errorf("%w: offset %d not aligned", mmapfile.ErrRange, off)
	}
	if err := r.check(off, n*8); err != nil {
		return nil, err
	}
	return r.mem[off/8 : off/8+n : off/8+n], nil
}

func (r *crashRegion) Grow(size int64) error {
	r.event()
	if size > modelCap {
		return fmt.Errorf("%w: model capacity", mmapfile.ErrRange)
	}
	r.size = max(r.size, size)
	return nil
}

func (r *crashRegion) Sync(off, n int64) error {
	r.event()
	if err := r.check(off, n); err != nil {
		return err
	}
	r.tracef("event %d: sync [%d, +%d) crashed=%v", r.events, off, n, r.crashed)
	if r.crashed || r.noEarlyMark && off != 0 {
		return nil
	}
	start := off / modelPage * modelPage
	end := min((off+n+modelPage-1)/modelPage*modelPage, r.size)
	copy(r.dur[start:end], r.memB[start:end])
	r.durSize = r.size // fsync makes the size durable too
	if off == 0 && n == r.size && r.onFullSync != nil {
		r.onFullSync()
	}
	return nil
}

func (r *crashRegion) ReadOnly() bool { return false }
func (r *crashRegion) Close() error   { r.closed = true; return nil }

// tornOdds are the chances, for a page that differs at the crash, of the
// old content, the new, or a torn write (each sector old, new or garbage).
type tornOdds struct{ old, new float64 }

// image returns the disk after a crash at the moment of r.crash.
// The image is built in buf when it is large enough.
func (r *crashRegion) image(rng *rand.Rand, odds tornOdds, garbage bool, buf []byte) []byte {
	size := r.durSize
	if r.crashSize != r.durSize && rng.Intn(2) == 0 {
		size = r.crashSize
	}
	var img []byte
	if int64(cap(buf)) >= size {
		img = buf[:size]
	} else {
		img = make([]byte, size)
	}
	for p := int64(0); p < size; p += modelPage {
		old := r.dur[p : p+modelPage]
		nw := zeroPage[:]
		if p < r.crashSize {
			nw = r.crashMem[p : p+modelPage]
		}
		out := img[p : p+modelPage]
		if string(old) == string(nw) {
			copy(out, old)
			continue
		}
		switch x := rng.Float64(); {
		case x < odds.old:
			copy(out, old)
		case x < odds.old+odds.new:
			copy(out, nw)
		default:
			for s := 0; s < modelPage; s += modelSector {
				switch c := rng.Intn(3); {
				case c == 0:
					copy(out[s:s+modelSector], old[s:])
				case c == 1 || !garbage:
					copy(out[s:s+modelSector], nw[s:])
				default:
					rng.Read(out[s : s+modelSector])
				}
			}
		}
	}
	return img
}

var zeroPage [modelPage]byte

// byteRegion is a read-only region over an image, without copying it.
type byteRegion struct{ b []byte }

func (r byteRegion) Size() int64 { return int64(len(r.b)) }
func (r byteRegion) Bytes(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > int64(len(r.b)) {
		return nil, mmapfile.ErrRange
	}
	return r.b[off : off+n : off+n], nil
}
func (r byteRegion) Words(off, n int64) ([]uint64, error) {
	b, err := r.Bytes(off, n*8)
	if err != nil || n == 0 {
		return nil, err
	}
	if off%8 != 0 || uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
		return nil, mmapfile.ErrRange
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n), nil
}
func (r byteRegion) Grow(int64) error        { return mmapfile.ErrReadOnly }
func (r byteRegion) Sync(int64, int64) error { return mmapfile.ErrReadOnly }
func (r byteRegion) ReadOnly() bool          { return true }
func (r byteRegion) Close() error            { return nil }
