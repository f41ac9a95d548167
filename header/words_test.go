package header

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
)

// fileBytes is a file in memory for the word functions: ReadAt and WriteAt
// within the slice.
type fileBytes []byte

func (f fileBytes) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(f).ReadAt(p, off)
}

func (f fileBytes) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(f)) {
		return 0, fmt.Errorf("write [%d, +%d) outside %d bytes", off, len(p), len(f))
	}
	return copy(f[off:], p), nil
}

// TestHotWords reads and writes each word of the hot page alone, by field,
// against the little-endian word at its …Offset constant: a read sets that
// field alone, a write changes those 8 bytes alone, and HotWordOffset is the
// constant.
func TestHotWords(t *testing.T) {
	head, _ := randomHead(t)
	for _, c := range []struct {
		name  string
		field func(h *Hot) *uint64
		off   int64
	}{
		{"State", func(h *Hot) *uint64 { return &h.State }, StateOffset},
		{"DiskSeq", func(h *Hot) *uint64 { return &h.DiskSeq }, DiskSeqOffset},
		{"Published", func(h *Hot) *uint64 { return &h.Published }, PublishedOffset},
		{"FlushCount", func(h *Hot) *uint64 { return &h.FlushCount }, FlushCountOffset},
		{"Retired", func(h *Hot) *uint64 { return &h.Retired }, RetiredOffset},
		{"Replaced", func(h *Hot) *uint64 { return &h.Replaced }, ReplacedOffset},
		{"BootID[1]", func(h *Hot) *uint64 { return &h.BootID[1] }, BootIDOffset + 8},
		{"DirtySince", func(h *Hot) *uint64 { return &h.DirtySince }, DirtySinceOffset},
		{"CleanBootID", func(h *Hot) *uint64 { return &h.CleanBootID }, CleanBootIDOffset},
		{"Taking", func(h *Hot) *uint64 { return &h.Taking }, TakingOffset},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h Hot
			if got := HotWordOffset(&h, c.field(&h)); got != c.off {
				t.Errorf("HotWordOffset = %d, want %d", got, c.off)
			}
			if err := ReadHotWords(fileBytes(head), &h, c.field(&h)); err != nil {
				t.Fatal(err)
			}
			want := Hot{}
			*c.field(&want) = binary.LittleEndian.Uint64(head[c.off:])
			if h != want {
				t.Errorf("read %+v, want %+v (the word at %d alone)", h, want, c.off)
			}
			checkWrite(t, head, c.off, func(f fileBytes, v uint64) error {
				*c.field(&h) = v
				return WriteHotWords(f, &h, c.field(&h))
			})
		})
	}
}

// TestLineWords reads each word of a filter line alone, by field.
func TestLineWords(t *testing.T) {
	head, _ := randomHead(t)
	const e = 41
	for _, c := range []struct {
		name  string
		field func(l *Line) *uint64
		off   int64
	}{
		{"Items", func(l *Line) *uint64 { return &l.Items }, FilterItemsOffset},
		{"Mark", func(l *Line) *uint64 { return &l.Mark }, FilterMarkOffset},
		{"MinID", func(l *Line) *uint64 { return &l.MinID }, FilterMinIDOffset},
		{"MaxID", func(l *Line) *uint64 { return &l.MaxID }, FilterMaxIDOffset},
		{"Pending", func(l *Line) *uint64 { return &l.Pending }, FilterPendingOffset},
		{"Index", func(l *Line) *uint64 { return &l.Index }, FilterIndexOffset},
		{"Writers", func(l *Line) *uint64 { return &l.Writers }, FilterWritersOffset},
		{"Reserved", func(l *Line) *uint64 { return &l.Reserved }, FilterReservedOffset},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l Line
			if err := ReadLineWords(fileBytes(head), e, &l, c.field(&l)); err != nil {
				t.Fatal(err)
			}
			want := Line{}
			*c.field(&want) = binary.LittleEndian.Uint64(head[FilterLineOffset(e)+c.off:])
			if l != want {
				t.Errorf("read %+v, want %+v (the word at %d of line %d alone)", l, want, c.off, e)
			}
		})
	}
}

// TestSlotWords writes each word of a writer slot's header alone, by field.
func TestSlotWords(t *testing.T) {
	head, _ := randomHead(t)
	const s = 62
	for _, c := range []struct {
		name  string
		field func(sl *Slot) *uint64
		off   int64
	}{
		{"Owner", func(sl *Slot) *uint64 { return &sl.Owner }, SlotOwnerOffset},
		{"PID", func(sl *Slot) *uint64 { return &sl.PID }, SlotPIDOffset},
		{"Reserved", func(sl *Slot) *uint64 { return &sl.Reserved }, SlotReservedOffset},
		{"Opened", func(sl *Slot) *uint64 { return &sl.Opened }, SlotOpenedOffset},
		{"Records[3].Doubt", func(sl *Slot) *uint64 { return &sl.Records[3].Doubt }, RecordOffset(s, 3) - SlotOffset(s) + RecDoubtOffset},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sl Slot
			checkWrite(t, head, SlotOffset(s)+c.off, func(f fileBytes, v uint64) error {
				*c.field(&sl) = v
				return WriteSlotWords(f, s, &sl, c.field(&sl))
			})
		})
	}
}

// checkWrite checks that write(f, v) over a copy of head stores v at off,
// little-endian, and changes nothing else.
func checkWrite(t *testing.T, head []byte, off int64, write func(f fileBytes, v uint64) error) {
	t.Helper()
	f := fileBytes(bytes.Clone(head))
	const v uint64 = 0x1122334455667788
	if err := write(f, v); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint64(f[off:]); got != v {
		t.Errorf("the word at %d is %#x after the write, want %#x", off, got, v)
	}
	binary.LittleEndian.PutUint64(f[off:], binary.LittleEndian.Uint64(head[off:]))
	if !bytes.Equal(f, head) {
		t.Errorf("the write changed bytes outside [%d, %d)", off, off+8)
	}
}

// eofReader returns io.EOF with every read, whole or not, as io.ReaderAt
// allows at the end of its input.
type eofReader []byte

func (r eofReader) ReadAt(p []byte, off int64) (int, error) {
	n, _ := bytes.NewReader(r).ReadAt(p, off)
	return n, io.EOF
}

// TestWordsShortAndWholeReads checks the reads' edge: a reader that ends
// inside a word fails and leaves the field as it was; one that returns
// io.EOF with the whole word read succeeds; reads go in order and stop at
// the first error; a field of another value panics.
func TestWordsShortAndWholeReads(t *testing.T) {
	head, _ := randomHead(t)
	want := ReadHot(head)
	h := Hot{State: 7, Replaced: 9}
	err := ReadHotWords(fileBytes(head[:ReplacedOffset+4]), &h, &h.State, &h.Replaced)
	if !errors.Is(err, io.EOF) {
		t.Errorf("read of a word the file cuts: error %v, want io.EOF", err)
	}
	if h.State != want.State || h.Replaced != 9 {
		t.Errorf("after the cut read, State %#x Replaced %#x, want %#x and 9 (as it was)", h.State, h.Replaced, want.State)
	}
	h = Hot{}
	if err := ReadHotWords(eofReader(head[:ReplacedOffset+8]), &h, &h.Replaced); err != nil || h.Replaced != want.Replaced {
		t.Errorf("whole word read with io.EOF: %v, Replaced %#x, want %#x", err, h.Replaced, want.Replaced)
	}
	if err := ReadHotWords(eofReader(head[:ReplacedOffset+7]), &h, &h.Replaced); !errors.Is(err, io.EOF) {
		t.Errorf("a word short by a byte: error %v, want io.EOF", err)
	}
	if err := ReadHotWords(fileBytes(head), &h); err != nil {
		t.Errorf("no fields: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a field of another value did not panic")
		}
	}()
	var other Hot
	ReadHotWords(fileBytes(head), &h, &other.State)
}
