//go:build cgo

package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/dablooms/dablooms/scaling"
)

// newTestHandle registers a new store at a temporary path as a scaling
// handle, as new_scaling_bloom does, and frees it when the test ends.
func newTestHandle(t testing.TB, capacity uint64) (*handle, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: capacity, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	p := register(f, kindScaling, path)
	h, err := lookup(p, kindScaling)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := release(p, kindScaling); err != nil {
			t.Error(err)
		}
		f.Close()
	})
	return h, path
}

// modifyThrough runs an Add (or Remove) through h as modify does.
func modifyThrough(h *handle, key string, id uint64, add bool) error {
	h.beginModify()
	var err error
	if add {
		err = h.f.Add([]byte(key), id)
	} else {
		err = h.f.Remove([]byte(key), id)
	}
	h.refreshAfter(err == nil)
	return err
}

func memField(h *handle) uint64 { return uint64(h.sc.header.mem_seqnum) }

// TestMemSeqnumField: the header's mem_seqnum after adds and removes is the
// last count plus this handle's modifications that succeeded, and a count
// taken between a modification's change and its refresh does not count it
// twice.
func TestMemSeqnumField(t *testing.T) {
	h, path := newTestHandle(t, 1000)
	if got := memField(h); got != 0 || !h.known {
		t.Fatalf("new file: field %d, known %v; want 0, true", got, h.known)
	}
	for i := range 10 {
		if err := modifyThrough(h, fmt.Sprint("k", i), uint64(i), true); err != nil {
			t.Fatal(err)
		}
	}
	if got := memField(h); got != 10 {
		t.Fatalf("after 10 adds: field %d", got)
	}
	if err := modifyThrough(h, "absent", 3, false); err == nil {
		t.Fatal("remove of an absent key succeeded")
	}
	if got := memField(h); got != 10 {
		t.Fatalf("after a refused remove: field %d, want 10", got)
	}

	// Another thread counts after this add changed the file and before its
	// refresh: the count has it, so the refresh must not add it again.
	h.beginModify()
	if err := h.f.Add([]byte("k10"), 10); err != nil {
		t.Fatal(err)
	}
	if mem, _ := h.refreshCounted(); mem != 11 {
		t.Fatalf("count %d, want 11", mem)
	}
	h.refreshAfter(true)
	if got := memField(h); got != 11 || h.recount {
		t.Fatalf("a count beside an add: field %d (recount pending %v), want 11", got, h.recount)
	}
	// A count before the change: the add is not in it.
	h.beginModify()
	h.refreshCounted()
	if err := h.f.Remove([]byte("k10"), 10); err != nil {
		t.Fatal(err)
	}
	h.refreshAfter(true)
	if got := memField(h); got != 12 {
		t.Fatalf("a count before a remove: field %d, want 12", got)
	}

	// Another handle's modifications: in the next count, not before.
	g, err := scaling.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i := range 5 {
		if err := g.Add([]byte(fmt.Sprint("g", i)), uint64(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := modifyThrough(h, "k11", 200, true); err != nil {
		t.Fatal(err)
	}
	if got := memField(h); got != 13 {
		t.Fatalf("another handle's adds before a count: field %d, want 13", got)
	}
	if mem, _ := h.refreshCounted(); mem != 18 || memField(h) != 18 {
		t.Fatalf("count %d, field %d; want 18", mem, memField(h))
	}
	if got, want := uint64(h.sc.header.max_id), uint64(200); got != want {
		t.Fatalf("max_id %d, want %d", got, want)
	}
}

// TestStructFieldsAfterModify: the fields a refresh after a modification
// writes (counts, ids, filters, sizes, seqnums) are what the store's Stats
// says, as the chain grows and after a flush.
func TestStructFieldsAfterModify(t *testing.T) {
	h, _ := newTestHandle(t, 100)
	for i := range 700 {
		if err := modifyThrough(h, fmt.Sprint("k", i), uint64(i+1), true); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			if err := modifyThrough(h, fmt.Sprint("k", i), uint64(i+1), false); err != nil {
				t.Fatal(err)
			}
		}
		if i%50 != 49 {
			continue
		}
		if i == 349 {
			if err := h.f.Flush(); err != nil {
				t.Fatal(err)
			}
			h.refreshCounted()
		}
		st := h.f.Stats()
		sc := h.sc
		if int(sc.num_blooms) != len(st.Filters) || int64(sc.num_bytes) != st.FileSize || int64(h.bitmap.bytes) != st.FileSize ||
			uint64(sc.header.mem_seqnum) != st.MemSeqnum || uint64(sc.header.disk_seqnum) != st.DiskSeqnum ||
			uint64(sc.header.max_id) != uint64(i+1) || uint64(sc.capacity) != st.Capacity || float64(sc.error_rate) != st.ErrorRate {
			t.Fatalf("after %d adds: blooms %d bytes %d mem %d disk %d max_id %d capacity %d; stats %d %d %d %d, capacity %d",
				i+1, sc.num_blooms, sc.num_bytes, sc.header.mem_seqnum, sc.header.disk_seqnum, sc.header.max_id, sc.capacity,
				len(st.Filters), st.FileSize, st.MemSeqnum, st.DiskSeqnum, st.Capacity)
		}
		blooms := unsafe.Slice(sc.blooms, len(st.Filters)+1)
		for j, fs := range st.Filters {
			b := blooms[j]
			if uint64(b.header.count) != fs.Count || uint64(b.header.id) != fs.LastID || uint64(b.capacity) != fs.Capacity ||
				int(b.nfuncs) != fs.K || uint64(b.size) != fs.Counters || int64(b.offset) != fs.Offset ||
				int64(b.num_bytes) != fs.Bytes || float64(b.error_rate) != fs.ErrorTarget {
				t.Fatalf("after %d adds, filter %d: count %d id %d capacity %d; stats %+v", i+1, j, b.header.count, b.header.id, b.capacity, fs)
			}
		}
		if blooms[len(st.Filters)] != nil {
			t.Fatalf("blooms[%d] is set past num_blooms", len(st.Filters))
		}
	}
}

// BenchmarkRefresh: what a C add or remove pays to keep the struct true,
// against the Stats snapshot it took before.
func BenchmarkRefresh(b *testing.B) {
	h, _ := newTestHandle(b, 100_000)
	for i := range 50_000 {
		if err := modifyThrough(h, fmt.Sprint("k", i), uint64(i), true); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("refreshAfter", func(b *testing.B) {
		for b.Loop() {
			h.beginModify()
			h.refreshAfter(true)
		}
	})
	b.Run("Stats", func(b *testing.B) {
		for b.Loop() {
			h.f.Stats()
		}
	})
}
