package header

import (
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// randomHead returns a file head of random bytes and its hot region as
// words, decoded little-endian as a writer's mapping holds them.
func randomHead(t *testing.T) ([]byte, []uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	head := make([]byte, DataOffset)
	for i := range head {
		head[i] = byte(r.Uint32())
	}
	hot := make([]uint64, (DataOffset-HotOffset)/8)
	for j := range hot {
		hot[j] = binary.LittleEndian.Uint64(head[HotOffset+8*j:])
	}
	return head, hot
}

// TestViewsOverWordsMatchBytes checks that a view laid over the mapped
// words and the same view read from the file's bytes agree, for every
// line, slot and record: both place each field where the format does.
func TestViewsOverWordsMatchBytes(t *testing.T) {
	head, hot := randomHead(t)
	if got, want := *HotAt(hot), ReadHot(head); got != want {
		t.Errorf("hot page: words %+v, bytes %+v", got, want)
	}
	for i := range MaxFilters {
		if got, want := *LineAt(hot, i), ReadLine(head, i); got != want {
			t.Errorf("line %d: words %+v, bytes %+v", i, got, want)
		}
	}
	for s := range NumSlots {
		sl := SlotAt(hot, s)
		if got, want := *sl, ReadSlot(head, s); got != want {
			t.Errorf("slot %d: words and bytes differ", s)
		}
		for r := range RecordsPerSlot {
			if RecordAt(hot, s, r) != &sl.Records[r] {
				t.Errorf("RecordAt(%d, %d) is not record %d of SlotAt(%d)", s, r, r, s)
			}
		}
	}
}

// TestViewFieldsAtTheirOffsets checks each field of each view, read from
// bytes, against the little-endian word at its …Offset constant, and that
// FieldOffset names that constant.
func TestViewFieldsAtTheirOffsets(t *testing.T) {
	head, _ := randomHead(t)
	h := ReadHot(head)
	checkFields(t, head, "Hot", &h, 0, HotOffset, []viewField{
		{"State", &h.State, StateOffset}, {"DiskSeq", &h.DiskSeq, DiskSeqOffset},
		{"Published", &h.Published, PublishedOffset}, {"FlushCount", &h.FlushCount, FlushCountOffset},
		{"Retired", &h.Retired, RetiredOffset}, {"Replaced", &h.Replaced, ReplacedOffset},
		{"Reserved[0]", &h.Reserved[0], HotReservedOffset}, {"BootID[1]", &h.BootID[1], BootIDOffset + 8},
		{"DirtySince", &h.DirtySince, DirtySinceOffset}, {"CleanBootID", &h.CleanBootID, CleanBootIDOffset},
	})
	const e = 37
	l := ReadLine(head, e)
	base := FilterLineOffset(e)
	checkFields(t, head, "Line", &l, base, base, []viewField{
		{"Items", &l.Items, FilterItemsOffset}, {"Mark", &l.Mark, FilterMarkOffset},
		{"MinID", &l.MinID, FilterMinIDOffset}, {"MaxID", &l.MaxID, FilterMaxIDOffset},
		{"Pending", &l.Pending, FilterPendingOffset}, {"Index", &l.Index, FilterIndexOffset},
		{"Writers", &l.Writers, FilterWritersOffset}, {"Reserved", &l.Reserved, FilterReservedOffset},
	})
	const s, r = 63, 14
	sl := ReadSlot(head, s)
	base = SlotOffset(s)
	checkFields(t, head, "Slot", &sl, base, base, []viewField{
		{"Owner", &sl.Owner, SlotOwnerOffset}, {"PID", &sl.PID, SlotPIDOffset},
		{"Reserved", &sl.Reserved, SlotReservedOffset}, {"Opened", &sl.Opened, SlotOpenedOffset},
	})
	rec := &sl.Records[r]
	base = RecordOffset(s, r)
	checkFields(t, head, "Record", rec, base, base, []viewField{
		{"Op", &rec.Op, RecOpOffset}, {"Hash", &rec.Hash, RecHashOffset},
		{"Changed", &rec.Changed, RecChangedOffset}, {"Doubt", &rec.Doubt, RecDoubtOffset},
		{"Word", &rec.Word, RecWordOffset}, {"New", &rec.New, RecNewOffset},
		{"IndexSlot", &rec.IndexSlot, RecIndexSlotOffset}, {"IndexFP", &rec.IndexFP, RecIndexFPOffset},
	})
	if got := FieldOffset(&l, &h.State); got != -1 {
		t.Errorf("FieldOffset of a word outside the view = %d, want -1", got)
	}
}

// viewField is a field of a view read from a file head: its name, its
// word in the view and its …Offset constant.
type viewField struct {
	name string
	w    *uint64
	off  int64
}

// checkFields checks each field of v, a view read from head at file offset
// start: the field holds the little-endian word at base+off in head, and
// FieldOffset places it at base+off-start in the view. (The constants of
// Hot are file offsets, base 0; the others' are offsets in their view,
// base = start.)
func checkFields[V View](t *testing.T, head []byte, view string, v *V, base, start int64, fields []viewField) {
	t.Helper()
	for _, f := range fields {
		off := base + f.off
		if at := binary.LittleEndian.Uint64(head[off:]); *f.w != at {
			t.Errorf("%s.%s = %#x, the word at %d is %#x", view, f.name, *f.w, off, at)
		}
		if got, want := FieldOffset(v, f.w), off-start; got != want {
			t.Errorf("FieldOffset of %s.%s = %d, want %d", view, f.name, got, want)
		}
	}
}

// TestPutViewsRoundTrip checks that the Put functions write back exactly
// what the Read functions read, and only the view's bytes.
func TestPutViewsRoundTrip(t *testing.T) {
	head, _ := randomHead(t)
	orig := append([]byte(nil), head...)
	PutHot(head, ReadHot(head))
	PutLine(head, 5, ReadLine(head, 5))
	PutSlot(head, 9, ReadSlot(head, 9))
	if string(head) != string(orig) {
		t.Fatal("writing back what was read changed the bytes")
	}
	l := ReadLine(head, 5)
	l.Pending = 0x0102030405060708
	PutLine(head, 5, l)
	off := FilterLineOffset(5) + FilterPendingOffset
	for j := range head {
		inside := int64(j) >= off && int64(j) < off+8
		if !inside && head[j] != orig[j] {
			t.Fatalf("byte %d changed (%#x → %#x); only [%d, %d) should", j, orig[j], head[j], off, off+8)
		}
	}
	if got := binary.LittleEndian.Uint64(head[off:]); got != l.Pending {
		t.Fatalf("pending word %#x, want %#x", got, l.Pending)
	}
}

// TestViewsAliasTheWords checks that a view over words is those words: an
// atomic store through the view is seen in the words and the reverse.
func TestViewsAliasTheWords(t *testing.T) {
	hot := make([]uint64, (DataOffset-HotOffset)/8)
	l := LineAt(hot, 3)
	atomic.StoreUint64(&l.MaxID, 42|Sealed)
	if got := hot[(FilterLineOffset(3)+FilterMaxIDOffset-HotOffset)/8]; got != 42|Sealed {
		t.Fatalf("word under Line.MaxID = %#x", got)
	}
	hot[(RecordOffset(2, 4)+RecDoubtOffset-HotOffset)/8] = 7
	if got := atomic.LoadUint64(&RecordAt(hot, 2, 4).Doubt); got != 7 {
		t.Fatalf("Record.Doubt = %d, want the word's 7", got)
	}
	atomic.AddUint64(&HotAt(hot).Published, 3)
	if got := hot[(PublishedOffset-HotOffset)/8]; got != 3 {
		t.Fatalf("word under Hot.Published = %d", got)
	}
}
